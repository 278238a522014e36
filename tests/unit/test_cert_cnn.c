/* test_cert_cnn.c - the graph bounds of cert/vt_cert_graph.h (the residual CNN: convolution, batch
 * norm in evaluation form, ReLU, max pooling, residual add with a strided projection, global average
 * pooling, dense layer and bias) against an independent direct evaluation of the same network: on
 * random small CNNs and random boxes, every sampled input's values (every node) and margins, in the
 * real-arithmetic network (a rigorous enclosure: long double interval arithmetic rounded outward, the
 * batch norm's square root included; a violation only when the enclosure lies wholly outside) and in
 * the deployed one (exact: every rounded operation RN32 of its value, batch norm the FP64 chain of
 * kernels/vt_cnn_hd.h), stay inside IBP's intervals and above
 * IBP's, CROWN's and alpha-CROWN's margin bounds; CROWN is never below IBP, alpha-CROWN never below
 * CROWN (strictly above it on some margins: the count is reported), its slopes in [0, 1] and the same
 * bits when computed again. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../cert/vt_cert_graph.h"
#include "../../cert/vt_cert_int.h"
#include "../../kernels/vt_cnn_hd.h"
#include "vt_test.h"

typedef long double ld;

/* the network: input 2 x 6 x 6 channels-first */
enum { CI = 2, HI = 6, C1 = 4, C2 = 6, NCLS = 5 };
typedef struct {
    float w_stem[9 * CI * C1], w_b1[9 * C1 * C1], w_b2[9 * C1 * C1], w_s1[9 * C1 * C2], w_s2[9 * C2 * C2],
        w_sc[C1 * C2], w_fc[C2 * NCLS], b_fc[NCLS];
    float bn[6][4][C2]; /* per batch norm: rm, rv, gamma, beta */
    double eps;
} cnn;

static double uni(vt_rng *r) { return (double)(vt_rng_next(r) >> 11) * 0x1p-53; }

static void fill(vt_rng *r, float *w, size_t n, double a)
{
    for (size_t i = 0; i < n; i++) w[i] = (float)((2 * uni(r) - 1) * a);
}

static void make(vt_rng *r, cnn *n)
{
    fill(r, n->w_stem, sizeof n->w_stem / 4, 0.6), fill(r, n->w_b1, sizeof n->w_b1 / 4, 0.4);
    fill(r, n->w_b2, sizeof n->w_b2 / 4, 0.4), fill(r, n->w_s1, sizeof n->w_s1 / 4, 0.4);
    fill(r, n->w_s2, sizeof n->w_s2 / 4, 0.3), fill(r, n->w_sc, sizeof n->w_sc / 4, 0.6);
    fill(r, n->w_fc, sizeof n->w_fc / 4, 0.8), fill(r, n->b_fc, NCLS, 0.3);
    for (int b = 0; b < 6; b++)
        for (int c = 0; c < C2; c++) {
            n->bn[b][0][c] = (float)((2 * uni(r) - 1) * 0.3), n->bn[b][1][c] = (float)(0.3 + 1.5 * uni(r));
            n->bn[b][2][c] = (float)(0.5 + uni(r)), n->bn[b][3][c] = (float)((2 * uni(r) - 1) * 0.2);
        }
    n->eps = 1e-5;
}

/* the graph; ids of every node in order in ids[] (returns their count) */
static int build(const cnn *n, vt_cert_graph **gp, uint32_t *ids)
{
    vt_cert_graph *g = NULL;
    int k = 0;
    uint32_t x = 0, t, a, s, sc;
    CHECK_OK(vt_cert_graph_new(CI * HI * HI, &g));
#define BN(i, in, C) CHECK_OK(vt_cert_graph_bn(g, in, C, n->bn[i][0], n->bn[i][1], n->bn[i][2], n->bn[i][3], n->eps, &t))
    CHECK_OK(vt_cert_graph_conv(g, x, HI, HI, CI, 3, 1, 1, 1, C1, n->w_stem, 1, &t)); ids[k++] = t;
    BN(0, t, C1); ids[k++] = t;
    CHECK_OK(vt_cert_graph_relu(g, t, &t)); ids[k++] = t;
    CHECK_OK(vt_cert_graph_maxpool(g, t, HI, HI, C1, 2, &a)); ids[k++] = a; /* 3 x 3 x C1 */
    CHECK_OK(vt_cert_graph_conv(g, a, 3, 3, C1, 3, 1, 1, 0, C1, n->w_b1, 1, &t)); ids[k++] = t;
    BN(1, t, C1); ids[k++] = t;
    CHECK_OK(vt_cert_graph_relu(g, t, &t)); ids[k++] = t;
    CHECK_OK(vt_cert_graph_conv(g, t, 3, 3, C1, 3, 1, 1, 0, C1, n->w_b2, 1, &t)); ids[k++] = t;
    BN(2, t, C1); ids[k++] = t;
    CHECK_OK(vt_cert_graph_add(g, t, a, &t)); ids[k++] = t;
    CHECK_OK(vt_cert_graph_relu(g, t, &a)); ids[k++] = a;
    CHECK_OK(vt_cert_graph_conv(g, a, 3, 3, C1, 3, 2, 1, 0, C2, n->w_s1, 1, &t)); ids[k++] = t; /* 2 x 2 x C2 */
    BN(3, t, C2); ids[k++] = t;
    CHECK_OK(vt_cert_graph_relu(g, t, &t)); ids[k++] = t;
    CHECK_OK(vt_cert_graph_conv(g, t, 2, 2, C2, 3, 1, 1, 0, C2, n->w_s2, 1, &s)); ids[k++] = s;
    BN(4, s, C2); ids[k++] = s = t;
    CHECK_OK(vt_cert_graph_conv(g, a, 3, 3, C1, 1, 2, 0, 0, C2, n->w_sc, 1, &sc)); ids[k++] = sc;
    BN(5, sc, C2); ids[k++] = sc = t;
    CHECK_OK(vt_cert_graph_add(g, s, sc, &t)); ids[k++] = t;
    CHECK_OK(vt_cert_graph_relu(g, t, &t)); ids[k++] = t;
    CHECK_OK(vt_cert_graph_avgpool(g, t, 4, C2, 0.25f, &t)); ids[k++] = t;
    CHECK_OK(vt_cert_graph_dense(g, t, NCLS, n->w_fc, 1, &t)); ids[k++] = t;
    CHECK_OK(vt_cert_graph_bias(g, t, n->b_fc, &t)); ids[k++] = t;
#undef BN
    *gp = g;
    return k;
}

/* ---------------------------------------------------------------- the direct evaluation */

/* Every value is an interval [lo, hi]. The real network: each long double operation's result rounded
 * outward by one ulp (nextafterl: every operation used, sqrtl included, is correctly rounded, so the
 * exact value lies between the neighbours of the rounded result), a rigorous enclosure of the
 * real-arithmetic value. The deployed network (g_dep): lo = hi, the values as the project computes
 * them (each rounded operation's exact sum, exact in long double for these sizes, rounded to FP32;
 * batch norm the FP64 chain vti_bn_eval1), no widening. */
typedef struct {
    ld lo, hi;
} iv;

static int g_dep;
static ld dn(ld v) { return g_dep ? v : nextafterl(v, -INFINITY); }
static ld up(ld v) { return g_dep ? v : nextafterl(v, INFINITY); }
static iv pt(ld v) { return (iv){v, v}; }
static iv add(iv a, iv b) { return (iv){dn(a.lo + b.lo), up(a.hi + b.hi)}; }
static iv sub(iv a, ld c) { return (iv){dn(a.lo - c), up(a.hi - c)}; }
static iv mulc(iv a, ld w) { return w >= 0 ? (iv){dn(a.lo * w), up(a.hi * w)} : (iv){dn(a.hi * w), up(a.lo * w)}; }
static iv rnd(iv v) { return g_dep ? pt((ld)(float)v.lo) : v; }
static iv imax(iv a, iv b) { return (iv){a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi}; }

/* channels-last output Ho x Wo x Co of a convolution of x (channels-first when chw) */
static void conv(const iv *x, int H, int C, int k, int s, int p, int chw, int Co, const float *w, iv *y)
{
    int Ho = (H + 2 * p - k) / s + 1;
    for (int oy = 0; oy < Ho; oy++)
        for (int ox = 0; ox < Ho; ox++)
            for (int co = 0; co < Co; co++) {
                iv acc = pt(0);
                for (int ky = 0; ky < k; ky++)
                    for (int kx = 0; kx < k; kx++) {
                        int iy = oy * s + ky - p, ix = ox * s + kx - p;
                        if (iy < 0 || ix < 0 || iy >= H || ix >= H) continue;
                        for (int c = 0; c < C; c++)
                            acc = add(acc, mulc(x[chw ? (c * H + iy) * H + ix : (iy * H + ix) * C + c],
                                                (ld)w[((ky * k + kx) * C + c) * Co + co]));
                    }
                y[(oy * Ho + ox) * Co + co] = rnd(acc);
            }
}

/* gamma (x - rm) / sqrt(rv + eps) + beta: the square root of an enclosure of rv + eps, the quotient
 * by its ends (both positive) */
static void bn(const cnn *n, int i, iv *x, int N, int C)
{
    for (int j = 0; j < N; j++) {
        int c = j % C;
        float rm = n->bn[i][0][c], rv = n->bn[i][1][c], ga = n->bn[i][2][c], be = n->bn[i][3][c];
        if (g_dep) {
            x[j] = pt((float)vti_bn_eval1((float)x[j].lo, rm, rv, ga, be, n->eps));
            continue;
        }
        iv d = mulc(sub(x[j], rm), ga), q;
        ld sl = dn(sqrtl(dn((ld)rv + (ld)n->eps))), su = up(sqrtl(up((ld)rv + (ld)n->eps)));
        q.lo = dn(d.lo / (d.lo >= 0 ? su : sl)), q.hi = up(d.hi / (d.hi >= 0 ? sl : su));
        x[j] = add(q, pt(be));
    }
}

static void relu(iv *x, int N)
{
    for (int j = 0; j < N; j++) x[j] = imax(x[j], pt(0));
}

/* a convolution from node src into v[*k], its batch norm i into v[*k + 1], with relu its ReLU next */
static void unit(const cnn *n, iv v[32][CI * HI * HI * C1], int *k, const iv *src, int H, int C, int kk, int s, int p,
                 int chw, int Co, const float *w, int i, int with_relu)
{
    int Ho = (H + 2 * p - kk) / s + 1, N = Ho * Ho * Co;
    conv(src, H, C, kk, s, p, chw, Co, w, v[*k]);
    memcpy(v[*k + 1], v[*k], sizeof v[0]), bn(n, i, v[*k + 1], N, Co);
    *k += 2;
    if (with_relu) memcpy(v[*k], v[*k - 1], sizeof v[0]), relu(v[*k], N), (*k)++;
}

/* every node's values into v[k] (in build's order) */
static void eval(const cnn *n, const float *xin, iv v[32][CI * HI * HI * C1])
{
    iv x[CI * HI * HI];
    int k = 0;
    for (int i = 0; i < CI * HI * HI; i++) x[i] = pt(xin[i]);
    unit(n, v, &k, x, HI, CI, 3, 1, 1, 1, C1, n->w_stem, 0, 1);
    for (int oy = 0; oy < 3; oy++) /* max pool 2 */
        for (int ox = 0; ox < 3; ox++)
            for (int c = 0; c < C1; c++) {
                iv m = pt(-INFINITY);
                for (int dy = 0; dy < 2; dy++)
                    for (int dx = 0; dx < 2; dx++) m = imax(m, v[k - 1][((oy * 2 + dy) * HI + ox * 2 + dx) * C1 + c]);
                v[k][(oy * 3 + ox) * C1 + c] = m;
            }
    int pool = k++;
    unit(n, v, &k, v[pool], 3, C1, 3, 1, 1, 0, C1, n->w_b1, 1, 1);
    unit(n, v, &k, v[k - 1], 3, C1, 3, 1, 1, 0, C1, n->w_b2, 2, 0);
    for (int j = 0; j < 9 * C1; j++) v[k][j] = rnd(add(v[k - 1][j], v[pool][j]));
    k++;
    memcpy(v[k], v[k - 1], sizeof v[0]), relu(v[k], 9 * C1), k++;
    int a = k - 1;
    unit(n, v, &k, v[a], 3, C1, 3, 2, 1, 0, C2, n->w_s1, 3, 1);
    unit(n, v, &k, v[k - 1], 2, C2, 3, 1, 1, 0, C2, n->w_s2, 4, 0);
    int s = k - 1;
    unit(n, v, &k, v[a], 3, C1, 1, 2, 0, 0, C2, n->w_sc, 5, 0);
    for (int j = 0; j < 4 * C2; j++) v[k][j] = rnd(add(v[s][j], v[k - 1][j]));
    k++;
    memcpy(v[k], v[k - 1], sizeof v[0]), relu(v[k], 4 * C2), k++;
    for (int c = 0; c < C2; c++) {
        iv acc = pt(0);
        for (int t = 0; t < 4; t++) acc = add(acc, mulc(v[k - 1][t * C2 + c], (ld)0.25f));
        v[k][c] = rnd(acc);
    }
    k++;
    for (int j = 0; j < NCLS; j++) {
        iv acc = pt(0);
        for (int i = 0; i < C2; i++) acc = add(acc, mulc(v[k - 1][i], (ld)n->w_fc[i * NCLS + j]));
        v[k][j] = rnd(acc);
    }
    k++;
    for (int j = 0; j < NCLS; j++) v[k][j] = rnd(add(v[k - 1][j], pt((ld)n->b_fc[j])));
}

static iv V[32][CI * HI * HI * C1];

enum { NM = 4 }; /* the bounds sampled: IBP, CROWN, alpha-CROWN (CROWN's intermediate bounds), CROWN-IBP */

typedef struct {
    long points, outside, below, straddle;
    ld slack; /* the smallest (margin enclosure's lower end - bound) */
} tally;

/* per_box points of the box [xl, xu] (corners for the first 150) evaluated in both semantics against
 * every node's interval of g's last bounds and the margin bounds lb[0 .. nb) */
static void sample(vt_rng *r, const cnn *n, vt_cert_graph *g, const uint32_t *ids, int nn, const double *xl,
                   const double *xu, uint32_t label, double lb[][NCLS], int nb, int per_box, tally *t)
{
    for (int smp = 0; smp < per_box; smp++) {
        float x[CI * HI * HI];
        for (int i = 0; i < CI * HI * HI; i++) {
            double u = uni(r), v = smp < 150 ? (u < 0.5 ? xl[i] : xu[i]) : xl[i] + u * (xu[i] - xl[i]);
            float f = (float)v;
            while (f < xl[i]) f = nextafterf(f, INFINITY);
            while (f > xu[i]) f = nextafterf(f, -INFINITY);
            x[i] = f;
        }
        for (g_dep = 0; g_dep < 2; g_dep++) {
            eval(n, x, V);
            t->points++;
            for (int k = 0; k < nn; k++) {
                const double *l, *u;
                vt_cert_graph_interval(g, ids[k], &l, &u);
                for (uint32_t j = 0; j < vt_cert_graph_size(g, ids[k]); j++) {
                    /* a violation only when the enclosure lies wholly outside */
                    if (!(V[k][j].hi >= l[j] && V[k][j].lo <= u[j])) {
                        if (t->outside++ < 5 && nb)
                            printf("  node %d [%u] in [%.20Lg, %.20Lg] outside [%.20g, %.20g] (%s)\n", k, j,
                                   V[k][j].lo, V[k][j].hi, l[j], u[j], g_dep ? "deployed" : "real");
                    } else t->straddle += !(V[k][j].lo >= l[j] && V[k][j].hi <= u[j]);
                }
            }
            for (uint32_t j = 0; j < NCLS; j++) {
                /* the margin's enclosure; below a bound only when its upper end is */
                ld mlo = dn(V[nn - 1][label].lo - V[nn - 1][j].hi), mhi = up(V[nn - 1][label].hi - V[nn - 1][j].lo);
                for (int m = 0; m < nb; m++)
                    if (j != label && !(mhi >= lb[m][j])) {
                        if (t->below++ < 5)
                            printf("  margin %u: in [%.20Lg, %.20Lg], below %.20g (method %d)\n", j, mlo, mhi, lb[m][j], m);
                    } else if (j != label) {
                        t->straddle += !(mlo >= lb[m][j]);
                        if (mlo - lb[m][j] < t->slack) t->slack = mlo - lb[m][j];
                    }
            }
        }
    }
}

static double IL[32][CI * HI * HI * C1], IU[32][CI * HI * HI * C1]; /* IBP's intervals */
static double IL2[32][CI * HI * HI * C1], IU2[32][CI * HI * HI * C1]; /* CROWN's */

/* A dense node of the project's semantics (RN32 of the exact sum) whose values pass FLT_MAX: logits
 * y0 = 5e38, y1 = 4.5e38 (real), both +inf in the deployed network, whose margin y0 - y1 is then NaN,
 * not > 0: the margins must not be proved there (IBP, CROWN, alpha-CROWN), while the real network's
 * (finite) are; the twin scaled by 1/8 (in range) is proved in both semantics. */
static void test_overflow(void)
{
    for (int scale = 0; scale < 2; scale++)
        for (int sem = 0; sem < 2; sem++) {
            vt_cert_graph *g = NULL;
            uint32_t t = 0;
            float s = scale ? 0.125f : 1.0f;
            const float w[8] = {2.5e38f * s, 2.25e38f * s, 0, 0, 2.5e38f * s, 2.25e38f * s, 0, 0}; /* [2, 4] */
            CHECK_OK(vt_cert_graph_new(2, &g));
            if (!g) return;
            CHECK_OK(vt_cert_graph_dense(g, 0, 4, w, 1, &t));
            vt_cert_graph_set_sem(g, sem ? VT_CERT_GRAPH_REAL : VT_CERT_GRAPH_PROJECT);
            double xl[2] = {1, 1}, xu[2] = {1, 1}, lb[4];
            for (int m = 0; m < 3; m++) {
                vt_cert_method meth = m == 0 ? VT_CERT_IBP : m == 1 ? VT_CERT_CROWN : VT_CERT_ALPHA_CROWN;
                CHECK_OK(vt_cert_graph_bounds(g, xl, xu, 0, meth, lb));
                int proved = lb[1] > 0 && lb[2] > 0 && lb[3] > 0;
                CHECK(proved == (scale || sem), "overflow: scale %d, %s, method %d: margins %sproved", scale,
                      sem ? "real" : "deployed", m, proved ? "" : "not ");
            }
            vt_cert_graph_free(g);
        }
}

int main(void)
{
    test_overflow();
    vt_rng r = {20261202};
    long crown_better = 0, alpha_better = 0, full_better = 0, rows = 0, verified[NM] = {0, 0, 0, 0};
    long slopes = 0, values = 0, tighter = 0, dense_checked = 0;
    tally t = {0, 0, 0, 0, INFINITY}, hook = {0, 0, 0, 0, INFINITY};
    /* samples a box (corners for the first 150): 400, or VT_CERT_SAMPLES evaluations in all (each sample
     * is evaluated in both semantics: VT_CERT_SAMPLES / (4 networks x 12 boxes x 2)) for a longer run */
    int per_box = 400;
    const char *env = getenv("VT_CERT_SAMPLES");
    if (env && atol(env) / 96 > per_box) per_box = (int)(atol(env) / 96 < 100000000 ? atol(env) / 96 : 100000000);
    for (int net = 0; net < 4; net++) {
        cnn n;
        make(&r, &n);
        vt_cert_graph *g;
        uint32_t ids[32];
        int nn = build(&n, &g, ids);
        CHECK(nn == 23, "the graph has %d nodes", nn);
        for (int box = 0; box < 12; box++) {
            const double epss[4] = {0.0005, 0.003, 0.02, 0.1};
            double eps = epss[box % 4];
            float c[CI * HI * HI];
            double xl[CI * HI * HI], xu[CI * HI * HI];
            for (int i = 0; i < CI * HI * HI; i++) c[i] = (float)uni(&r);
            vt_cert_box(c, CI * HI * HI, eps, xl, xu);
            g_dep = 0;
            eval(&n, c, V);
            uint32_t label = 0;
            for (uint32_t j = 1; j < NCLS; j++)
                if (V[nn - 1][j].lo > V[nn - 1][label].lo) label = j;
            double lb[NM][NCLS], lb2[NCLS];
            CHECK_OK(vt_cert_graph_bounds(g, xl, xu, label, VT_CERT_IBP, lb[0]));
            for (int k = 0; k < nn; k++) {
                const double *l, *u;
                vt_cert_graph_interval(g, ids[k], &l, &u);
                memcpy(IL[k], l, vt_cert_graph_size(g, ids[k]) * sizeof *l);
                memcpy(IU[k], u, vt_cert_graph_size(g, ids[k]) * sizeof *u);
            }
            vt_cert_graph_set_intermediate(g, VT_CERT_INTER_IBP); /* CROWN-IBP */
            CHECK_OK(vt_cert_graph_bounds(g, xl, xu, label, VT_CERT_CROWN, lb[3]));
            vt_cert_graph_set_intermediate(g, VT_CERT_INTER_CROWN);
            CHECK_OK(vt_cert_graph_bounds(g, xl, xu, label, VT_CERT_CROWN, lb[1]));
            /* CROWN's intermediate bounds: inside IBP's (intersected), tighter on some values */
            for (int k = 0; k < nn; k++) {
                const double *l, *u;
                vt_cert_graph_interval(g, ids[k], &l, &u);
                for (uint32_t j = 0; j < vt_cert_graph_size(g, ids[k]); j++) {
                    CHECK(l[j] >= IL[k][j] && u[j] <= IU[k][j] && l[j] <= u[j], "node %d [%u]: [%g, %g] not inside IBP's [%g, %g]",
                          k, j, l[j], u[j], IL[k][j], IU[k][j]);
                    values++, tighter += l[j] > IL[k][j] || u[j] < IU[k][j];
                }
                memcpy(IL2[k], l, vt_cert_graph_size(g, ids[k]) * sizeof *l);
                memcpy(IU2[k], u, vt_cert_graph_size(g, ids[k]) * sizeof *u);
            }
            if (box % 4 == 1) { /* the sparse intermediate passes give the dense ones' bits */
                vti_cert_graph_dense = 1;
                CHECK_OK(vt_cert_graph_bounds(g, xl, xu, label, VT_CERT_CROWN, lb2));
                vti_cert_graph_dense = 0;
                CHECK(memcmp(lb2, lb[1], sizeof lb2) == 0, "the dense intermediate passes give other margin bounds");
                for (int k = 0; k < nn; k++) {
                    const double *l, *u;
                    vt_cert_graph_interval(g, ids[k], &l, &u);
                    CHECK(memcmp(l, IL2[k], vt_cert_graph_size(g, ids[k]) * sizeof *l) == 0 &&
                              memcmp(u, IU2[k], vt_cert_graph_size(g, ids[k]) * sizeof *u) == 0,
                          "the dense intermediate passes give other intervals (node %d)", k);
                }
                dense_checked++;
            }
            CHECK_OK(vt_cert_graph_bounds(g, xl, xu, label, VT_CERT_ALPHA_CROWN, lb[2]));
            uint32_t U = vt_cert_graph_n_alpha(g);
            size_t na = (size_t)(NCLS - 1) * U;
            double *al = malloc((na ? na : 1) * sizeof *al);
            CHECK(al != NULL, "out of memory");
            memcpy(al, vt_cert_graph_alpha(g), na * sizeof *al);
            for (size_t k = 0; k < na; k++) CHECK(al[k] >= 0 && al[k] <= 1, "a slope outside [0, 1]");
            slopes += (long)na;
            CHECK_OK(vt_cert_graph_bounds(g, xl, xu, label, VT_CERT_ALPHA_CROWN, lb2));
            CHECK(memcmp(lb2, lb[2], sizeof lb2) == 0 && vt_cert_graph_n_alpha(g) == U &&
                      (na == 0 || memcmp(al, vt_cert_graph_alpha(g), na * sizeof *al) == 0),
                  "alpha-CROWN computed twice differs");
            free(al);
            for (uint32_t j = 0; j < NCLS; j++) {
                if (j == label) continue;
                rows++;
                CHECK(lb[3][j] >= lb[0][j], "CROWN-IBP below IBP");
                CHECK(lb[1][j] >= lb[3][j], "CROWN below CROWN-IBP");
                CHECK(lb[2][j] >= lb[1][j], "alpha-CROWN below CROWN");
                crown_better += lb[3][j] > lb[0][j];
                full_better += lb[1][j] > lb[3][j];
                alpha_better += lb[2][j] > lb[1][j];
            }
            for (int m = 0; m < NM; m++) {
                double mn = INFINITY;
                for (uint32_t j = 0; j < NCLS; j++)
                    if (j != label && lb[m][j] < mn) mn = lb[m][j];
                verified[m] += mn > 0;
            }
            /* the intervals are those of the last bounds (alpha-CROWN's: CROWN's intermediate bounds) */
            sample(&r, &n, g, ids, nn, xl, xu, label, lb, NM, per_box, &t);
            if (net == 0 && box % 4 == 2) { /* intermediate bounds made too tight on purpose are caught */
                vti_cert_graph_inward = 0.25;
                CHECK_OK(vt_cert_graph_bounds(g, xl, xu, label, VT_CERT_CROWN, lb2));
                vti_cert_graph_inward = 0;
                sample(&r, &n, g, ids, nn, xl, xu, label, NULL, 0, 200, &hook);
            }
        }
        vt_cert_graph_free(g);
    }
    printf("test_cert_cnn: %ld evaluations, %ld values outside an interval, %ld margins below a bound (%ld enclosures "
           "straddling an end, smallest margin slack %.3Lg); CROWN-IBP above IBP on %ld of %ld rows, CROWN (its "
           "intermediate bounds) above CROWN-IBP on %ld, alpha-CROWN above CROWN on %ld (%ld slopes); CROWN's "
           "intermediate bounds tighter than IBP's on %ld of %ld values; verified boxes IBP %ld, CROWN-IBP %ld, "
           "CROWN %ld, alpha-CROWN %ld; intermediate bounds moved inward on purpose: %ld values outside in %ld evaluations"
           "\n",
           t.points, t.outside, t.below, t.straddle, t.slack, crown_better, rows, full_better, alpha_better, slopes,
           tighter, values, verified[0], verified[3], verified[1], verified[2], hook.outside, hook.points);
    CHECK(t.outside == 0 && t.below == 0, "a sampled value left its bound");
    CHECK(crown_better > rows / 4, "CROWN-IBP is rarely tighter than IBP: %ld of %ld", crown_better, rows);
    CHECK(full_better > rows / 4, "CROWN's intermediate bounds rarely tighten a margin: %ld of %ld", full_better, rows);
    CHECK(tighter > values / 20, "CROWN's intermediate bounds rarely tighter than IBP's: %ld of %ld", tighter, values);
    CHECK(dense_checked == 12, "the dense passes compared on %ld boxes", dense_checked);
    CHECK(hook.outside > 0, "intermediate bounds moved inward went unnoticed (%ld evaluations)", hook.points);
    return vt_test_finish("test_cert_cnn");
}
