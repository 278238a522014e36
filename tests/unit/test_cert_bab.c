/* test_cert_bab.c - branch and bound (cert/vt_cert_bab.c, docs/certify.md "Branch and bound") on
 * random MLPs: every leaf's bound holds at sampled points of its subdomain, for the real-arithmetic
 * network and for the deployed one (exact evaluation, MPFR: the point's leaf found by the signs of
 * its exact ReLU inputs); the split tree's bytes read back and replay to the same bytes; a tree
 * with a split moved, a leaf dropped or a slope changed is rejected naming the node; branch and
 * bound closes boxes that alpha-CROWN alone leaves open. The spec rows' bounds on a subdomain (branch and
 * bound on a VNN-LIB property): never above the exact row value at sampled points satisfying the
 * splits, both semantics; an empty subdomain +inf. The row plan: the rows bounded as without it, the rest
 * skipped once a group fails. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cert/vt_cert.h"
#include "../../cert/vt_cert_int.h"
#include "../../common/vt_bytes.h"
#include "../../common/vt_error.h"
#include "cert_nets.h"
#include "vt_test.h"

#ifdef VT_HAVE_MPFR
#define PREC CERT_PREC

static long g_points, g_leaf_points, g_bad;

/* Sampled points of the box: each lands in the leaf its exact signs choose (a = 0: either side; the
 * active one here), whose bounds must hold there (a node the search never bounded: skipped). */
static void check_tree(const vt_cert_net *n, const vti_bab_tree *t, const float *x, double eps, const double *xl,
                       const double *xu, uint32_t label, vt_rng *r)
{
    uint32_t d = n->n[0], C = n->n[n->L];
    for (int s = 0; s < 400; s++) {
        float p[8];
        for (uint32_t i = 0; i < d; i++) {
            double v = s < 40 ? ((vt_rng_next(r) & 1) ? xu[i] : xl[i]) : xl[i] + cert_uni(r) * (xu[i] - xl[i]);
            p[i] = (float)v;
            if (!vt_cert_in_ball(p[i], x[i], eps)) p[i] = x[i];
        }
        for (int dep = 0; dep < 2; dep++) {
            int sg[8][32];
            double m[16];
            mpfr_t mg[16];
            for (uint32_t j = 0; j < C; j++) mpfr_init2(mg[j], PREC);
            if (cert_exact_signs(n, p, label, dep, mg, sg) && g_bad++ < 5)
                fprintf(stderr, "FAIL: the exact evaluation was not exact at %u bits\n", (unsigned)PREC);
            for (uint32_t j = 0; j < C; j++) m[j] = mpfr_get_d(mg[j], MPFR_RNDD), mpfr_clear(mg[j]); /* never above */
            uint32_t q = 0;
            while (t->v[q].split) q = (uint32_t)t->v[q].kid[sg[t->v[q].layer][t->v[q].index] ? 0 : 1];
            g_points++;
            if (!t->v[q].lb) continue;
            g_leaf_points++;
            for (uint32_t j = 0; j < C; j++)
                if (j != label && m[j] < t->v[q].lb[j] && g_bad++ < 5)
                    fprintf(stderr, "FAIL: leaf %u margin %u: exact %.17g < bound %.17g (deployed %d)\n", q, j, m[j],
                            t->v[q].lb[j], dep);
        }
    }
}

/* The byte offset of preorder node k in a tree's bytes (a leaf at depth t: na slopes, (C - 1) t
 * multipliers, C bounds). */
static size_t node_off(const uint8_t *p, uint32_t k, size_t na, uint32_t C)
{
    size_t off = 4;
    uint32_t pending[1100], sn = 0; /* the children still to come at each open depth */
    for (uint32_t q = 0; q < k; q++) {
        uint32_t depth = sn;
        if (vt_get_u32le(p + off)) {
            off += 12;
            pending[sn++] = 2;
        } else {
            off += 4 + (na + (size_t)(C - 1) * depth + C) * 8;
            while (sn && --pending[sn - 1] == 0) sn--;
        }
    }
    return off;
}

/* The tree written, read back and replayed: closed, the same bytes; then tampered copies rejected. */
static void check_bytes(vt_cert_ctx *c, const vt_cert_net *n, const vti_bab_tree *t, const double *xl,
                        const double *xu, uint32_t label, const vt_cert_settings *set, int *tampered)
{
    vti_buf o = {0}, o2 = {0};
    vti_bab_put(&o, t);
    CHECK(!o.bad, "tree bytes");
    vti_bab_tree u;
    memset(&u, 0, sizeof u);
    size_t used = 0;
    int closed = 0;
    CHECK_OK(vti_bab_scan(o.b, o.n, t->na, t->C, "example 0", &u, &used));
    CHECK(used == o.n, "scan used %zu of %zu", used, o.n);
    CHECK_OK(vti_bab_replay(c, n, xl, xu, label, set, &u, "test", "example 0", &closed));
    CHECK(closed == 1, "the replay does not close");
    vti_bab_put(&o2, &u);
    CHECK(o2.n == o.n && memcmp(o.b, o2.b, o.n) == 0, "replayed tree: other bytes");
    vti_bab_free(&u);
    /* tampering, each copy of the bytes: the root's split moved to another neuron, the last leaf dropped,
     * one slope of the first leaf changed */
    uint8_t *b = malloc(o.n);
    if (!b) abort();
    uint32_t N = vt_get_u32le(o.b), first_leaf = 0;
    while (vt_get_u32le(o.b + node_off(o.b, first_leaf, t->na, t->C))) first_leaf++;
    for (int kind = 0; kind < 3; kind++) {
        memcpy(b, o.b, o.n);
        size_t len = o.n;
        const char *want = NULL;
        vt_err want_e = VT_ERR_MISMATCH;
        if (kind == 0) { /* the root's split on the next neuron of its layer */
            uint32_t L = vt_get_u32le(b + 8), I = vt_get_u32le(b + 12);
            vt_put_u32le(b + 12, (I + 1) % n->n[L]);
            want = "split tree node";
        } else if (kind == 1) { /* the last leaf dropped (the count one lower) */
            len = node_off(b, N - 1, t->na, t->C);
            vt_put_u32le(b, N - 1);
            want = "lacks its inactive child", want_e = VT_ERR_FORMAT;
        } else { /* the first leaf's slopes all moved by a quarter inside [0, 1] */
            size_t a0 = node_off(b, first_leaf, t->na, t->C) + 4;
            for (size_t k = 0; k < t->na; k++) {
                double v = vt_bits_f64(vt_get_u64le(b + a0 + 8 * k));
                vt_put_u64le(b + a0 + 8 * k, vt_f64_bits(v < 0.5 ? v + 0.25 : v - 0.25));
            }
            want = "split tree node";
        }
        memset(&u, 0, sizeof u);
        vt_err e = vti_bab_scan(b, len, t->na, t->C, "example 0", &u, &used);
        if (!e) e = vti_bab_replay(c, n, xl, xu, label, set, &u, "test", "example 0", &closed);
        vti_bab_free(&u);
        CHECK(e == want_e && strstr(vt_errmsg(), want), "tamper %d: code %d, %s", kind, (int)e, e ? vt_errmsg() : "accepted");
        if (e == want_e) tampered[kind]++;
    }
    free(b), free(o.b), free(o2.b);
}

static void test_bab(void)
{
    vt_rng r = {vt_test_seed(20261206)};
    const uint32_t shapes[3][5] = {{5, 16, 16, 4, 0}, {4, 12, 12, 12, 3}, {6, 20, 5, 0, 0}};
    const uint32_t layers[3] = {3, 4, 2};
    int trees = 0, closed_by_bab = 0, tampered[3] = {0, 0, 0};
    for (int s = 0; s < 3; s++) {
        vt_cert_net n;
        float *store[12] = {0};
        cert_random_net(&r, &n, store, layers[s], shapes[s], 2.0, 0);
        vt_cert_ctx *c = NULL;
        CHECK_OK(vt_cert_ctx_new(&n, &c));
        if (!c) return;
        uint32_t d = n.n[0], C = n.n[n.L];
        vt_cert_settings set;
        vt_cert_settings_default(&set, VT_CERT_ALPHA_CROWN);
        set.alpha_iters = 8, set.bab_domains = 60;
        for (int box = 0; box < 10; box++) {
            float x[8];
            double xl[8], xu[8], lb[16], eps = 0.3, mn = -INFINITY;
            for (uint32_t i = 0; i < d; i++) x[i] = (float)cert_uni(&r);
            /* the label the network gives the centre, so that some boxes can be verified */
            double xd[8], lg[16];
            for (uint32_t i = 0; i < d; i++) xd[i] = x[i];
            vt_cert_forward64(c, xd, lg);
            uint32_t label = 0;
            for (uint32_t j = 1; j < C; j++)
                if (lg[j] > lg[label]) label = j;
            /* eps: the largest of 0.3 x 0.85^k that alpha-CROWN verifies, then (every other box) 12% more:
             * boxes near the edge of what alpha-CROWN proves, some provable by branch and bound only */
            for (int k = 0; k < 40 && !(mn > 0); k++, eps *= 0.85) {
                vt_cert_box(x, d, eps, xl, xu);
                CHECK_OK(vt_cert_bounds(c, xl, xu, label, &set, lb, NULL));
                mn = INFINITY;
                for (uint32_t j = 0; j < C; j++)
                    if (j != label && lb[j] < mn) mn = lb[j];
            }
            eps = eps / 0.85 * (box % 2 ? 1.12 : 1.0);
            vt_cert_box(x, d, eps, xl, xu);
            CHECK_OK(vt_cert_bounds(c, xl, xu, label, &set, lb, NULL));
            mn = INFINITY;
            for (uint32_t j = 0; j < C; j++)
                if (j != label && lb[j] < mn) mn = lb[j];
            vti_bab_tree t;
            memset(&t, 0, sizeof t);
            int closed = 0;
            uint32_t bounded = 0;
            int found = 0;
            CHECK_OK(vti_bab_search(c, xl, xu, label, &set, C, &t, &closed, &bounded, NULL, &found));
            CHECK(bounded >= 1 && bounded <= set.bab_domains, "%u subdomains bounded", bounded);
            trees++;
            if (closed && !(mn > 0)) closed_by_bab++;
            check_tree(&n, &t, x, eps, xl, xu, label, &r);
            if (closed && t.n > 1) check_bytes(c, &n, &t, xl, xu, label, &set, tampered);
            /* deterministic: the same search again gives the same tree */
            vti_bab_tree t2;
            memset(&t2, 0, sizeof t2);
            int closed2 = 0;
            uint32_t bounded2 = 0;
            CHECK_OK(vti_bab_search(c, xl, xu, label, &set, C, &t2, &closed2, &bounded2, NULL, &found));
            vti_buf o1 = {0}, o2 = {0};
            if (closed) vti_bab_put(&o1, &t), vti_bab_put(&o2, &t2);
            CHECK(closed2 == closed && bounded2 == bounded && t2.n == t.n && o1.n == o2.n &&
                      (!o1.n || memcmp(o1.b, o2.b, o1.n) == 0),
                  "a second search: another tree");
            free(o1.b), free(o2.b);
            vti_bab_free(&t), vti_bab_free(&t2);
        }
        if (layers[s] == 2) { /* one hidden layer: every split in layer 1, so no layers are saved for children;
                               * a tree well past the saved-layers table's first 64 nodes (ASan: no read past it) */
            vt_cert_settings big = set;
            big.bab_domains = 300;
            float x[8];
            double xl[8], xu[8];
            for (uint32_t i = 0; i < d; i++) x[i] = (float)cert_uni(&r);
            vt_cert_box(x, d, 2.0, xl, xu);
            vti_bab_tree t;
            memset(&t, 0, sizeof t);
            int closed = 0, found = 0;
            uint32_t bounded = 0;
            CHECK_OK(vti_bab_search(c, xl, xu, 0, &big, C, &t, &closed, &bounded, NULL, &found));
            CHECK(t.n > 130 && t.reused == 0, "one hidden layer: %u nodes, %u subdomains from saved layers", t.n, t.reused);
            vti_bab_free(&t);
        }
        vt_cert_ctx_free(c);
        for (int k = 0; k < 12; k++) free(store[k]);
    }
    CHECK(g_bad == 0, "%ld of %ld points outside their leaf's bound", g_bad, g_leaf_points);
    CHECK(g_leaf_points > 5000, "only %ld points in bounded leaves", g_leaf_points);
    CHECK(closed_by_bab >= 2, "branch and bound closed only %d boxes alpha-CROWN left open", closed_by_bab);
    CHECK(tampered[0] >= 2 && tampered[1] >= 2 && tampered[2] >= 2, "tampered trees rejected: %d %d %d", tampered[0],
          tampered[1], tampered[2]);
    printf("bab: %d trees, %d closed by branch and bound only; %ld points (%ld in bounded leaves), none outside; "
           "tampered trees rejected %d %d %d\n",
           trees, closed_by_bab, g_points, g_leaf_points, tampered[0], tampered[1], tampered[2]);
}

/* The spec rows' bounds on a subdomain (what branch and bound on a VNN-LIB property bounds,
 * vt_cert_spec_bounds with splits and each row's multipliers searched): rows Y_i - Y_k never above the
 * exact value, both semantics, at sampled points satisfying the splits (MPFR); an empty subdomain
 * gives +inf; the multipliers move. */
/* A random net of two hidden layers (widths w), its context, alpha-CROWN's settings with 8 steps. */
static vt_cert_ctx *small_net(vt_rng *r, const uint32_t *w, vt_cert_net *n, float **store, vt_cert_settings *set)
{
    cert_random_net(r, n, store, 3, w, 2.0, 0);
    vt_cert_ctx *c = NULL;
    CHECK_OK(vt_cert_ctx_new(n, &c));
    vt_cert_settings_default(set, VT_CERT_ALPHA_CROWN);
    set->alpha_iters = 8;
    return c;
}

static void test_spec_rows(void)
{
    vt_rng r = {vt_test_seed(0x5bec)};
    long pts = 0, bad = 0, moved = 0, empty = 0;
    for (int net = 0; net < 4; net++) {
        const uint32_t w[4] = {4, 12, 10, 5};
        vt_cert_net n;
        float *store[8] = {0};
        vt_cert_settings set;
        vt_cert_ctx *c = small_net(&r, w, &n, store, &set);
        if (!c) return;
        for (int box = 0; box < 12; box++) {
            float x[4];
            double xl[4], xu[4], C[3 * 5] = {0}, lb[3], beta[3 * 3];
            for (uint32_t i = 0; i < 4; i++) x[i] = (float)cert_uni(&r);
            vt_cert_box(x, 4, 0.15, xl, xu);
            for (int q = 0; q < 3; q++) { /* Y_i - Y_k, i != k */
                uint32_t i = (uint32_t)(vt_rng_next(&r) % 5), k = (i + 1 + (uint32_t)(vt_rng_next(&r) % 4)) % 5;
                C[q * 5 + i] = 1, C[q * 5 + k] = -1;
            }
            vt_cert_split sp[3];
            uint32_t ns = 1 + (uint32_t)(box % 3);
            for (uint32_t q = 0; q < ns; q++)
                sp[q].layer = 1 + q % 2, sp[q].index = (uint32_t)(vt_rng_next(&r) % (q % 2 ? 10 : 12)),
                sp[q].active = (uint32_t)(vt_rng_next(&r) & 1);
            if (ns == 3 && sp[2].layer == sp[0].layer && sp[2].index == sp[0].index) ns = 2;
            vt_cert_set_splits(c, sp, ns);
            vt_cert_set_split_beta(c, NULL, beta);
            CHECK_OK(vt_cert_spec_bounds(c, xl, xu, C, 3, &set, lb, NULL));
            vt_cert_set_split_beta(c, NULL, NULL);
            vt_cert_set_splits(c, NULL, 0);
            if (vt_cert_infeasible(c)) {
                CHECK(lb[0] == INFINITY && lb[1] == INFINITY && lb[2] == INFINITY, "an empty subdomain: not +inf");
                empty++;
                continue;
            }
            for (uint32_t q = 0; q < 3 * ns; q++) moved += beta[q] > 0;
            for (int s = 0; s < 300; s++) {
                float p[4];
                for (uint32_t i = 0; i < 4; i++) {
                    p[i] = (float)(xl[i] + cert_uni(&r) * (xu[i] - xl[i]));
                    if (!vt_cert_in_ball(p[i], x[i], 0.15)) p[i] = x[i];
                }
                for (int dep = 0; dep < 2; dep++) {
                    int sg[8][32];
                    mpfr_t mg[5], t;
                    for (int j = 0; j < 5; j++) mpfr_init2(mg[j], PREC);
                    mpfr_init2(t, PREC);
                    int inexact = cert_exact_signs(&n, p, 0, dep, mg, sg);
                    int in = !inexact;
                    for (uint32_t q = 0; q < ns; q++) in &= sg[sp[q].layer][sp[q].index] == (int)sp[q].active;
                    for (int q = 0; q < 3 && in; q++) { /* C . a = -(sum_j C_j (a_0 - a_j)) for a row summing to 0 */
                        mpfr_set_zero(t, 1);
                        for (int j = 0; j < 5; j++)
                            if (C[q * 5 + j] != 0) {
                                if (C[q * 5 + j] > 0) mpfr_sub(t, t, mg[j], MPFR_RNDN);
                                else mpfr_add(t, t, mg[j], MPFR_RNDN);
                            }
                        bad += mpfr_cmp_d(t, lb[q]) < 0;
                    }
                    pts += in;
                    for (int j = 0; j < 5; j++) mpfr_clear(mg[j]);
                    mpfr_clear(t);
                }
            }
        }
        vt_cert_ctx_free(c);
        for (int k = 0; k < 8; k++) free(store[k]);
    }
    CHECK(bad == 0, "%ld of %ld points below a row's subdomain bound", bad, pts);
    CHECK(pts > 1000, "only %ld sampled points satisfy their splits", pts);
    CHECK(moved > 0, "no multiplier moved");
    printf("spec rows on subdomains: %ld points satisfying the splits, none below a bound; %ld multipliers moved; "
           "%ld empty subdomains\n", pts, moved, empty);
}

/* Hostile tree bytes: refused as VT_ERR_FORMAT, never read past the end. */
static void test_scan_hostile(void)
{
    uint8_t b[64];
    size_t used;
    memset(b, 0, sizeof b);
    CHECK(vti_bab_scan(b, 3, 1, 2, "x", NULL, &used) == VT_ERR_FORMAT, "3 bytes");
    vt_put_u32le(b, 0);
    CHECK(vti_bab_scan(b, 64, 1, 2, "x", NULL, &used) == VT_ERR_FORMAT, "0 nodes");
    vt_put_u32le(b, 0xffffffffu);
    CHECK(vti_bab_scan(b, 64, 1, 2, "x", NULL, &used) == VT_ERR_FORMAT, "huge count");
    vt_put_u32le(b, 1), vt_put_u32le(b + 4, 1), vt_put_u32le(b + 8, 1), vt_put_u32le(b + 12, 0);
    CHECK(vti_bab_scan(b, 16, 1, 2, "x", NULL, &used) == VT_ERR_FORMAT && strstr(vt_errmsg(), "lacks its active child"),
          "a split without children: %s", vt_errmsg());
    vt_put_u32le(b + 4, 7);
    CHECK(vti_bab_scan(b, 64, 1, 2, "x", NULL, &used) == VT_ERR_FORMAT, "kind 7");
    vt_put_u32le(b + 4, 0);
    CHECK(vti_bab_scan(b, 4 + 4 + 24 - 1, 1, 2, "x", NULL, &used) == VT_ERR_FORMAT, "a truncated leaf");
    CHECK(vti_bab_scan(b, 4 + 4 + 24, 1, 2, "x", NULL, &used) == VT_OK && used == 32, "one leaf");
}

/* The row plan (vt_cert_set_row_plan): the rows in the order of a parent's bounds, in groups; the rows
 * bounded are the order's prefix up to the first group none of whose rows closes, each with the same
 * bound and slopes (bits) as bounding every row; the rest skipped, their bound -inf and their slopes the
 * warm start's. Margins (one row a group) and a property's rows (groups of two). */
static void test_plan(void)
{
    vt_rng r = {vt_test_seed(0x91a4)};
    const uint32_t w[4] = {6, 20, 16, 8};
    vt_cert_net n;
    float *store[8] = {0};
    vt_cert_settings set;
    vt_cert_ctx *c = small_net(&r, w, &n, store, &set);
    if (!c) return;
    const size_t na = vt_cert_n_alpha_row(c);
    const uint32_t R = 7;
    double *warm = calloc(R * na, sizeof *warm), *a1 = calloc(R * na, sizeof *a1), *a2 = calloc(R * na, sizeof *a2);
    int skipped_some = 0, all_bounded = 0, grouped_skip = 0;
    for (int box = 0; box < 24 && warm && a1 && a2; box++) {
        float x[6];
        double xl[6], xu[6], lb0[8], lb1[8], lb2[8], key[8], C[7 * 8] = {0};
        for (uint32_t i = 0; i < 6; i++) x[i] = (float)cert_uni(&r);
        vt_cert_box(x, 6, box % 3 == 0 ? 0.002 : 0.02 + 0.02 * (box % 8), xl, xu);
        uint32_t label = (uint32_t)box % 8, order[7], lbi[7];
        if (box % 3 == 0) { /* a tiny box around a point: the network's class there (every row may close) */
            double xd[6], lg[8];
            for (uint32_t i = 0; i < 6; i++) xd[i] = x[i];
            vt_cert_forward64(c, xd, lg);
            for (uint32_t j = label = 0; j < 8; j++) label = lg[j] > lg[label] ? j : label;
        }
        uint8_t last[7], skip[7];
        int spec = box >= 12; /* the property's rows label - j, in groups of two (the last alone) */
        for (uint32_t q = 0; q < R; q++) {
            lbi[q] = spec ? q : q + (q >= label);
            uint32_t j = q + (q >= label);
            C[q * 8 + label] = 1, C[q * 8 + j] = -1;
        }
        /* the parent: the box without splits, every row (its slopes the warm start) */
        if (spec) CHECK_OK(vt_cert_spec_bounds(c, xl, xu, C, R, &set, lb0, warm));
        else CHECK_OK(vt_cert_bounds(c, xl, xu, label, &set, lb0, warm));
        for (uint32_t q = 0; q < R; q++) key[q] = lb0[lbi[q]];
        vti_bab_order(key, R, order);
        for (uint32_t q = 1; q < R; q++) CHECK(key[order[q - 1]] <= key[order[q]], "box %d: the order", box);
        for (uint32_t q = 0; q < R; q++) last[q] = !spec || q % 2 == 1 || q + 1 == R;
        if (spec) /* a group's rows together: pairs of consecutive positions */
            for (uint32_t q = 0; q < R; q++) order[q] = q;
        vt_cert_set_bab_search(c, 1);
        vt_cert_set_warm(c, warm, NULL, 0);
        if (spec) CHECK_OK(vt_cert_spec_bounds(c, xl, xu, C, R, &set, lb2, a2));
        else CHECK_OK(vt_cert_bounds(c, xl, xu, label, &set, lb2, a2));
        vt_cert_set_row_plan(c, order, last, R, skip);
        if (spec) CHECK_OK(vt_cert_spec_bounds(c, xl, xu, C, R, &set, lb1, a1));
        else CHECK_OK(vt_cert_bounds(c, xl, xu, label, &set, lb1, a1));
        vt_cert_set_row_plan(c, NULL, NULL, 0, NULL);
        vt_cert_set_warm(c, NULL, NULL, 0);
        vt_cert_set_bab_search(c, 0);
        /* the expected prefix: up to the first group with no row > 0 */
        uint32_t upto = R, nsk = 0;
        int gclosed = 0;
        for (uint32_t q = 0; q < R; q++) {
            gclosed |= lb2[lbi[order[q]]] > 0;
            if (!last[q]) continue;
            if (!gclosed) {
                upto = q + 1;
                break;
            }
            gclosed = 0;
        }
        for (uint32_t q = 0; q < R; q++) {
            uint32_t row = order[q], k = lbi[row];
            if (q < upto) {
                CHECK(!skip[row] && memcmp(&lb1[k], &lb2[k], sizeof lb1[k]) == 0 &&
                          memcmp(a1 + row * na, a2 + row * na, na * sizeof *a1) == 0,
                      "box %d: row %u bounded with the plan, another bound or slopes (%.17g, %.17g)", box, row, lb1[k], lb2[k]);
            } else {
                nsk++;
                CHECK(skip[row] && lb1[k] == -INFINITY && memcmp(a1 + row * na, warm + row * na, na * sizeof *a1) == 0,
                      "box %d: row %u after the failing group: not skipped, or another bound or slopes", box, row);
            }
        }
        skipped_some += nsk > 0, all_bounded += nsk == 0, grouped_skip += spec && nsk > 0;
    }
    CHECK(skipped_some >= 3 && all_bounded >= 3 && grouped_skip >= 1, "plans: %d skipped, %d bounded every row, %d grouped",
          skipped_some, all_bounded, grouped_skip);
    printf("row plan: %d boxes skipped rows (%d of them in groups), %d bounded every row\n", skipped_some, grouped_skip,
           all_bounded);
    free(warm), free(a1), free(a2);
    vt_cert_ctx_free(c);
    for (int k = 0; k < 8; k++) free(store[k]);
}

#endif

int main(void)
{
#ifndef VT_HAVE_MPFR
    printf("test_cert_bab: built without MPFR: skipped\n");
    return 77;
#else
    test_scan_hostile();
    test_bab();
    test_spec_rows();
    test_plan();
    return vt_test_finish("test_cert_bab");
#endif
}
