/* Unit tests of the rounding rules: every edge case named in docs/rounding.md, the
 * plausibility checks, the context bookkeeping, and fast path == specification. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/vt_bytes.h"
#include "rounding/vt_exact.h"
#include "rounding/vt_round.h"
#include "vt_test.h"

static uint32_t fb(float f) { return vt_f32_bits(f); }

/* The replay rule of manifest formats 1-4 (legacy: an entry whose result is forced is accepted)
 * for an element whose exact value is the double X, with bound B. */
static vt_err jd(double X, double B, const vt_log_entry *e, float *out)
{
    vt_xacc a;
    vt_xacc_init(&a);
    vt_xacc_add(&a, X);
    return vt_round_judge1(&a, B, 1, e, out);
}

/* The same under the rule of format 5 (one log per state). */
static vt_err js(double X, double B, const vt_log_entry *e, float *out)
{
    vt_xacc a;
    vt_xacc_init(&a);
    vt_xacc_add(&a, X);
    return vt_round_judge1(&a, B, 0, e, out);
}

/* record one element; returns logged flag; *e gets the entry */
static int rec(double x, double B, float *out, vt_log_entry *e, vt_err *err)
{
    int logged = 0;
    memset(e, 0, sizeof *e);
    *err = vt_round_record1(x, B, out, &logged, e);
    return logged;
}

static void test_zero_sign(void)
{
    float o;
    vt_log_entry e;
    vt_err err;
    CHECK(!rec(0.0, 0.0, &o, &e, &err) && err == VT_OK && fb(o) == 0u, "+0 exact");
    CHECK(!rec(-0.0, 0.0, &o, &e, &err) && err == VT_OK && fb(o) == 0x80000000u, "-0 exact keeps its sign");
    /* +tiny with a bound reaching below zero: -0/+0 is a boundary, logged as a direction */
    CHECK(rec(1e-300, 1e-290, &o, &e, &err) && err == VT_OK && !e.is_value && e.up == 1 && fb(o) == 0u,
          "+tiny near zero logs up (err %d, val %d)", err, e.is_value);
    float r;
    /* the exact value on the other side of zero, within the bound: the entry decides */
    CHECK(jd(-1e-300, 1e-290, &e, &r) == VT_OK && fb(r) == 0u, "exact -tiny: the log's up gives +0");
    CHECK(rec(-1e-300, 1e-290, &o, &e, &err) && !e.is_value && e.up == 0 && fb(o) == 0x80000000u, "-tiny logs down");
    CHECK(jd(1e-300, 1e-290, &e, &r) == VT_OK && fb(r) == 0x80000000u, "exact +tiny: the log's down gives -0");
}

static void test_subnormal(void)
{
    float o, r;
    vt_log_entry e;
    vt_err err;
    double m = 3.5 * 0x1p-149; /* midpoint between 3 and 4 subnormal ulps: tie -> even (4) */
    CHECK(!rec(m, 0.0, &o, &e, &err) && o == (float)(4 * 0x1p-149), "subnormal tie, B=0, to even");
    CHECK(rec(m, 0x1p-170, &o, &e, &err) && !e.is_value && e.up == 1, "subnormal tie with bound logs up");
    CHECK(jd(m - 0x1p-171, 0x1p-170, &e, &r) == VT_OK && r == (float)(4 * 0x1p-149),
          "exact value just below the tie: the log's up is followed");
    CHECK(!rec(3.0 * 0x1p-149, 0x1p-170, &o, &e, &err) && o == (float)(3 * 0x1p-149), "exact subnormal stable");
    /* below half the smallest subnormal: rounds to zero */
    CHECK(!rec(0x1p-152, 0x1p-170, &o, &e, &err) && fb(o) == 0u, "underflow to +0 is stable far from 2^-150");
}

static void test_exponent_boundary(void)
{
    float o, r;
    vt_log_entry e;
    vt_err err;
    /* below 1.0 the spacing is 2^-24; midpoint 1 - 2^-25 ties to 1.0 (even) */
    double m_below = 1.0 - 0x1p-25;
    CHECK(!rec(m_below, 0, &o, &e, &err) && o == 1.0f, "tie below 1 to even");
    CHECK(rec(m_below + 0x1p-45, 0x1p-40, &o, &e, &err) && !e.is_value && e.up == 1 && o == 1.0f,
          "near midpoint below 1: direction up");
    CHECK(jd(m_below - 0x1p-41, 0x1p-40, &e, &r) == VT_OK && r == 1.0f, "judged across the boundary: up to 1");
    /* above 1.0 the spacing is 2^-23; midpoint 1 + 2^-24 ties to 1.0 */
    double m_above = 1.0 + 0x1p-24;
    CHECK(rec(m_above - 0x1p-45, 0x1p-40, &o, &e, &err) && !e.is_value && e.up == 0 && o == 1.0f,
          "near midpoint above 1: direction down");
    CHECK(jd(m_above + 0x1p-41, 0x1p-40, &e, &r) == VT_OK && r == 1.0f, "judged: down to 1");
    /* at exactly 1.0 with a bound smaller than both half-spacings: stable */
    CHECK(!rec(1.0, 0x1p-30, &o, &e, &err) && o == 1.0f, "exact 1.0 stable");
    /* a bound that covers both midpoints around 1.0 -> value entry */
    CHECK(rec(1.0, 0x1p-24, &o, &e, &err) && e.is_value && e.value_bits == fb(1.0f), "wide bound: value entry");
    /* 2W reaches only the midpoint below 1.0: a direction entry (up: 1.0 is the upper neighbour) */
    CHECK(rec(1.0, 0x1p-26, &o, &e, &err) && !e.is_value && e.up == 1 && o == 1.0f, "one boundary within 2W: direction");
}

static void test_ties_and_exact(void)
{
    float o, r;
    vt_log_entry e;
    vt_err err;
    double t = 1.0 + 0x1p-24; /* exact tie: 1.0 is even */
    CHECK(!rec(t, 0, &o, &e, &err) && o == 1.0f, "tie, B=0: deterministic, not logged");
    CHECK(rec(t, 0x1p-50, &o, &e, &err) && !e.is_value && e.up == 0 && o == 1.0f, "tie with bound logs down");
    CHECK(jd(t + 0x1p-52, 0x1p-50, &e, &r) == VT_OK && r == 1.0f, "exact value just above the tie: down followed");
    /* an exact tie judged with B = 0: RN32 picks the even neighbour, whatever the entry says */
    CHECK(jd(t, 0.0, NULL, &r) == VT_OK && r == 1.0f, "exact tie, B=0, no entry: to even");
    double t2 = 1.0 + 3 * 0x1p-24; /* tie between 1+2^-23 (odd) and 1+2^-22 (even) */
    CHECK(rec(t2, 0x1p-50, &o, &e, &err) && e.up == 1 && o == (float)(1.0 + 0x1p-22), "odd tie goes up");
    CHECK(!rec(0.5, 1e-12, &o, &e, &err) && o == 0.5f, "already FP32: stable");
    CHECK(!rec(0.1f, 1e-12, &o, &e, &err) && o == 0.1f, "0.1f exact");
}

static void test_overflow_nan(void)
{
    float o, r;
    vt_log_entry e;
    vt_err err;
    rec(1e39, 0, &o, &e, &err);
    CHECK(err == VT_ERR_DIVERGED, "1e39 diverges");
    rec(-1e39, 1.0, &o, &e, &err);
    CHECK(err == VT_ERR_DIVERGED, "-1e39 diverges");
    double thr = (double)FLT_MAX + ldexp(1.0, 103); /* FLT_MAX + ulp/2: tie to even -> inf */
    rec(thr, 0, &o, &e, &err);
    CHECK(err == VT_ERR_DIVERGED, "overflow threshold rounds to inf: diverged");
    CHECK(rec(thr - ldexp(1.0, 75), ldexp(1.0, 75), &o, &e, &err) && err == VT_OK && !e.is_value && e.up == 0 &&
              o == FLT_MAX,
          "just below the overflow threshold: direction down to FLT_MAX (err %d)", err);
    CHECK(jd(thr + ldexp(1.0, 74), ldexp(1.0, 75), &e, &r) == VT_OK && r == FLT_MAX,
          "exact value above the threshold: the log's down gives FLT_MAX");
    vt_log_entry up = e;
    up.up = 1;
    CHECK(jd(thr, ldexp(1.0, 75), &up, &r) == VT_ERR_IMPLAUSIBLE, "direction to inf is implausible");
    CHECK(jd(thr + ldexp(1.0, 80), ldexp(1.0, 75), NULL, &r) == VT_ERR_DIVERGED, "exact value beyond range diverges");
    rec(NAN, 0, &o, &e, &err);
    CHECK(err == VT_ERR_DIVERGED, "NaN diverges");
    rec(1.0, NAN, &o, &e, &err);
    CHECK(err == VT_ERR_DIVERGED, "NaN bound");
    rec(1.0, INFINITY, &o, &e, &err);
    CHECK(err == VT_ERR_DIVERGED, "inf bound");
    rec(1.0, -1.0, &o, &e, &err);
    CHECK(err == VT_ERR_DIVERGED, "negative bound");
    rec(INFINITY, 0, &o, &e, &err);
    CHECK(err == VT_ERR_DIVERGED, "inf input");
    vt_log_entry v = {0, fb(NAN), 1, 0};
    CHECK(jd(1.0, 1.0, &v, &r) == VT_ERR_IMPLAUSIBLE, "NaN value entry implausible");
    v.value_bits = fb(INFINITY);
    CHECK(jd(FLT_MAX, 1e38, &v, &r) == VT_ERR_IMPLAUSIBLE, "inf value entry implausible");
    CHECK(jd(NAN, 0.0, NULL, &r) == VT_ERR_DIVERGED, "NaN exact value");
}

/* Judgement against the exact value X with the trainer's bound B: every honest FP32 result is
 * in [RN32(X - B), RN32(X + B)], and nothing outside it is accepted. */
static void test_plausibility(void)
{
    float r;
    const float one_up = (float)(1.0 + 0x1p-23);
    double m = 1.0 + 0x1p-24; /* a midpoint */
    double B = 0x1p-40;
    vt_log_entry dn = {0, 0, 0, 0}, up = {0, 0, 0, 1};
    /* no boundary within B of X: a direction entry is moot, the result is RN32(X) either way */
    CHECK(jd(1.3, B, &dn, &r) == VT_OK && r == 1.3f, "direction without a boundary: RN32(X)");
    CHECK(jd(1.3, B, &up, &r) == VT_OK && r == 1.3f, "flipped direction without a boundary: still RN32(X)");
    /* a boundary within B: both neighbours are honest results, the entry picks one */
    CHECK(jd(m + B / 2, B, &dn, &r) == VT_OK && r == 1.0f, "down: 1");
    CHECK(jd(m + B / 2, B, &up, &r) == VT_OK && r == one_up, "up: 1 + 2^-23");
    CHECK(jd(m + 2 * B, B, &dn, &r) == VT_OK && r == one_up, "boundary 2B away: the direction is moot");
    /* two boundaries within B: a direction entry is not what an honest trainer writes */
    CHECK(jd(1.0, 0x1p-22, &dn, &r) == VT_ERR_IMPLAUSIBLE, "direction across two boundaries rejected");
    /* completeness: no entry, but a boundary within B of X -> missing entry */
    CHECK(jd(m + B / 4, B, NULL, &r) == VT_ERR_IMPLAUSIBLE, "missing entry detected");
    CHECK(strstr(vt_errmsg(), "missing log entry") != NULL, "message: %s", vt_errmsg());
    CHECK(jd(m + 2 * B, B, NULL, &r) == VT_OK && r == one_up, "boundary 2B away: no entry required");
    /* value entries: exactly the values RN32 can give within B of X */
    vt_log_entry v = {0, fb(1.0f), 1, 0};
    CHECK(jd(1.0 + 0x1p-30, 0x1p-26, &v, &r) == VT_OK && r == 1.0f, "value inside the window");
    v.value_bits = fb(one_up);
    CHECK(jd(1.0 + 0x1p-30, 0x1p-26, &v, &r) == VT_ERR_IMPLAUSIBLE, "one ulp off where only one value is honest");
    v.value_bits = fb(1.5f);
    CHECK(jd(1.0 + 0x1p-30, 0x1p-26, &v, &r) == VT_ERR_IMPLAUSIBLE, "value far outside rejected");
    v.value_bits = fb((float)(1.0 + 0x1p-21));
    CHECK(jd(1.0, 0x1p-21, &v, &r) == VT_OK, "value at X + B accepted");
    v.value_bits = fb((float)(1.0 + 0x1p-20));
    CHECK(jd(1.0, 0x1p-21, &v, &r) == VT_ERR_IMPLAUSIBLE, "value beyond X + B rejected");
    v.value_bits = fb((float)(1.0 - 0x1p-21));
    CHECK(jd(1.0, 0x1p-21, &v, &r) == VT_OK, "value at X - B accepted");
    /* B = 0: X itself is the FP64 result; only RN32(X) */
    v.value_bits = fb(1.0f);
    CHECK(jd(1.0, 0.0, &v, &r) == VT_OK, "B=0 value equal accepted");
    v.value_bits = fb(one_up);
    CHECK(jd(1.0, 0.0, &v, &r) == VT_ERR_IMPLAUSIBLE, "B=0 other value rejected");
    CHECK(jd(1.0, 0.0, &dn, &r) == VT_OK && r == 1.0f, "B=0 direction moot");
}

/* Manifest format 5, one log per state: the per-element rules. An entry is accepted only where the
 * exact window [X - B, X + B] holds a boundary (a direction entry where it holds one), and the
 * record rule on the exact value writes exactly that. */
static void test_one_log_rules(void)
{
    float r;
    const float one_up = (float)(1.0 + 0x1p-23);
    double m = 1.0 + 0x1p-24, B = 0x1p-40;
    vt_log_entry dn = {0, 0, 0, 0}, up = {0, 0, 0, 1}, v = {0, fb(1.3f), 1, 0};
    CHECK(js(1.3, B, &dn, &r) == VT_ERR_IMPLAUSIBLE && strstr(vt_errmsg(), "unneeded log entry"),
          "format 5: a direction entry without a boundary is unneeded (%s)", vt_errmsg());
    CHECK(js(1.3, B, &v, &r) == VT_ERR_IMPLAUSIBLE, "format 5: a value entry equal to the forced result is unneeded");
    CHECK(js(m + 2 * B, B, &dn, &r) == VT_ERR_IMPLAUSIBLE, "format 5: boundary 2B away: unneeded");
    CHECK(js(1.0, 0.0, &dn, &r) == VT_ERR_IMPLAUSIBLE, "format 5: B = 0: any entry is unneeded");
    v.value_bits = fb(1.0f);
    CHECK(js(1.0, 0.0, &v, &r) == VT_ERR_IMPLAUSIBLE, "format 5: B = 0 value entry unneeded");
    CHECK(jd(1.0, 0.0, &v, &r) == VT_OK, "formats 1-4: the same entry is accepted (moot)");
    CHECK(js(m + B / 2, B, &dn, &r) == VT_OK && r == 1.0f, "format 5: down across one boundary");
    CHECK(js(m + B / 2, B, &up, &r) == VT_OK && r == one_up, "format 5: up across one boundary");
    v.value_bits = fb(one_up);
    CHECK(js(m + B / 2, B, &v, &r) == VT_ERR_IMPLAUSIBLE && strstr(vt_errmsg(), "direction entry"),
          "format 5: a value entry across one boundary is not the rule's (%s)", vt_errmsg());
    CHECK(jd(m + B / 2, B, &v, &r) == VT_OK && r == one_up, "formats 1-4: accepted");
    v.value_bits = fb((float)(1.0 + 0x1p-21));
    CHECK(js(1.0, 0x1p-21, &v, &r) == VT_OK, "format 5: value entry across several boundaries");
    CHECK(js(m + B / 4, B, NULL, &r) == VT_ERR_IMPLAUSIBLE, "format 5: missing entry still detected");
    CHECK(js(1.3, B, NULL, &r) == VT_OK && r == 1.3f, "format 5: no entry where none is needed");
    /* the record rule on the exact value, and the judge accepts what it writes */
    vt_xacc X;
    double xs[6] = {1.3, m + B / 2, m - B / 2, 1.0, m, (double)FLT_MAX + 0x1p103 - 0x1p90};
    double bs[6] = {B, B, B, 0x1p-21, 0.0, 0x1p92};
    int want[6] = {0, 1, 1, 2, 0, 1}; /* none, direction, direction, value, none (B = 0), direction */
    for (int k = 0; k < 6; k++) {
        int lg;
        vt_log_entry e;
        float o, o2;
        vt_xacc_init(&X);
        vt_xacc_add(&X, xs[k]);
        CHECK_OK(vt_round_record1_exact(&X, bs[k], &o, &lg, &e));
        CHECK(o == vt_xacc_round32(&X), "record %d: RN32 of the exact value", k);
        CHECK((lg ? 1 + e.is_value : 0) == want[k], "record %d: entry kind %d, expected %d", k, lg ? 1 + e.is_value : 0,
              want[k]);
        CHECK(js(xs[k], bs[k], lg ? &e : NULL, &o2) == VT_OK && fb(o2) == fb(o), "record %d: judged alike", k);
    }
}

/* One state, one log (format 5): two honest trainers whose FP64 values differ (any x within B of
 * the exact value) write byte-identical logs, a third party with yet other values accepts them, a
 * padded log is refused at its first padded entry - and formats 1-4 accepted the padding. The
 * elements are exact sums of three FP32 terms near FP32 midpoints, with bounds on either side of
 * the distance to them (one boundary, several, none), and some with B = 0. */
static void test_one_log_vt_round(uint64_t seed)
{
    enum { N = 4096 };
    vt_rng g = {seed ^ 0x51ed};
    float *terms = malloc(sizeof(float) * 3 * N), *out[3];
    double *X = malloc(sizeof(double) * N), *B = malloc(sizeof(double) * N), *x[3];
    for (int t = 0; t < 3; t++) out[t] = malloc(sizeof(float) * N), x[t] = malloc(sizeof(double) * N);
    static const float one = 1.0f;
    for (int e = 0; e < N; e++) {
        int ex = (int)(vt_rng_next(&g) % 40) - 20;
        double sg = (vt_rng_next(&g) & 1) ? -1.0 : 1.0;
        float f = (float)(sg * ldexp(1.0 + vt_rng_uniform(&g), ex));
        float half = (float)(sg * ldexp(1.0, ex - 24)); /* half an ulp of f: f + half is a midpoint */
        int j = 1 + (int)(vt_rng_next(&g) % 28), s3 = (int)(vt_rng_next(&g) % 15) - 7;
        float off = (float)ldexp((double)s3, ex - 23 - j);
        int kind = (int)(vt_rng_next(&g) % 8);
        terms[3 * e] = f, terms[3 * e + 1] = kind == 7 ? 0.0f : half, terms[3 * e + 2] = off;
        X[e] = (double)terms[3 * e] + (double)terms[3 * e + 1] + (double)terms[3 * e + 2]; /* exact */
        B[e] = kind == 0 ? 0.0 : ldexp(1.0, ex - 23 - (int)(vt_rng_next(&g) % 21));
        for (int t = 0; t < 3; t++) /* an honest value: within B of X (with room for its own rounding) */
            x[t][e] = B[e] == 0 ? X[e] : X[e] + B[e] * (1.0 - 0x1p-5) * (2.0 * vt_rng_uniform(&g) - 1.0);
    }
    vt_bounds b = {.kind = VT_BOUNDS_ARRAY, .b = B, .xa = terms, .xa_si = 3 * 64, .xa_sj = 3, .xa_sk = 1, .xb = &one,
                   .xK = 3};
    vt_steplog lg[2];
    uint8_t *enc[2];
    size_t len[2];
    for (int t = 0; t < 2; t++) {
        vt_steplog_init(&lg[t], 0);
        vt_rctx c;
        vt_rctx_init(&c, VT_RMODE_RECORD, (vt_bound_cfg){.mode = VT_BOUND_PROVABLE});
        CHECK_OK(vt_rctx_begin_step(&c, 3, &lg[t]));
        CHECK_OK(vt_round(&c, 7, x[t], &b, N / 64, 64, out[t]));
        CHECK_OK(vt_steplog_serialize(&lg[t], &enc[t], &len[t]));
    }
    long wrong = 0;
    for (int e = 0; e < N; e++) {
        vt_xacc a;
        vt_xacc_init(&a);
        vt_xacc_add(&a, X[e]);
        wrong += fb(out[0][e]) != fb(vt_xacc_round32(&a)) || fb(out[1][e]) != fb(out[0][e]);
    }
    CHECK(wrong == 0, "%ld elements not RN32 of the exact value", wrong);
    uint64_t ne = lg[0].ops[0].n_entries, nv = 0;
    for (uint64_t k = 0; k < ne; k++) nv += lg[0].ops[0].e[k].is_value;
    CHECK(ne > 200 && nv > 20 && ne - nv > 100, "the set logs many entries of both kinds (%llu, %llu values)",
          (unsigned long long)ne, (unsigned long long)nv);
    CHECK(len[0] == len[1] && memcmp(enc[0], enc[1], len[0]) == 0,
          "two honest trainers with other FP64 values write the same log (%zu and %zu bytes)", len[0], len[1]);
    vt_rctx r;
    vt_rctx_init(&r, VT_RMODE_REPLAY, (vt_bound_cfg){.mode = VT_BOUND_PROVABLE});
    CHECK_OK(vt_rctx_begin_step(&r, 3, &lg[0]));
    CHECK_OK(vt_round(&r, 7, x[2], &b, N / 64, 64, out[2]));
    CHECK(memcmp(out[2], out[0], sizeof(float) * N) == 0 && r.stats.checked == ne, "a third party accepts the log");
    /* padding: a direction entry on the first element without one */
    vt_oplog *o = &lg[0].ops[0];
    uint64_t pad = 0;
    while (pad < ne && o->e[pad].index == pad) pad++;
    vt_log_entry *ne2 = malloc(sizeof *ne2 * (ne + 1));
    memcpy(ne2, o->e, sizeof *ne2 * pad);
    ne2[pad] = (vt_log_entry){.index = pad};
    memcpy(ne2 + pad + 1, o->e + pad, sizeof *ne2 * (ne - pad));
    vt_log_entry *keep = o->e;
    o->e = ne2, o->n_entries = ne + 1;
    vt_rctx_init(&r, VT_RMODE_REPLAY, (vt_bound_cfg){.mode = VT_BOUND_PROVABLE});
    CHECK_OK(vt_rctx_begin_step(&r, 3, &lg[0]));
    CHECK(vt_round(&r, 7, x[2], &b, N / 64, 64, out[2]) == VT_ERR_IMPLAUSIBLE && r.fault.index == pad &&
              r.fault.has_entry && strstr(vt_errmsg(), "unneeded log entry"),
          "a padded entry is refused at its element %llu: %s", (unsigned long long)pad, vt_errmsg());
    vt_rctx_init(&r, VT_RMODE_REPLAY, (vt_bound_cfg){.mode = VT_BOUND_PROVABLE, .legacy_log = 1});
    CHECK_OK(vt_rctx_begin_step(&r, 3, &lg[0]));
    CHECK(vt_round(&r, 7, x[2], &b, N / 64, 64, out[2]) == VT_OK && memcmp(out[2], out[0], sizeof(float) * N) == 0,
          "formats 1-4 accepted the padding (moot)");
    o->e = keep, o->n_entries = ne;
    free(ne2);
    /* formats 1-4: the trainer logged by its own value - the logs of the two trainers may differ,
     * and each is a superset of the format-5 log */
    for (int t = 0; t < 2; t++) {
        vt_steplog l;
        vt_steplog_init(&l, 0);
        vt_rctx c;
        vt_rctx_init(&c, VT_RMODE_RECORD, (vt_bound_cfg){.mode = VT_BOUND_PROVABLE, .legacy_log = 1});
        CHECK_OK(vt_rctx_begin_step(&c, 3, &l));
        CHECK_OK(vt_round(&c, 7, x[t], &b, N / 64, 64, out[2]));
        uint64_t k = 0;
        for (uint64_t i = 0; i < ne; i++) {
            while (k < l.ops[0].n_entries && l.ops[0].e[k].index < lg[t].ops[0].e[i].index) k++;
            CHECK(k < l.ops[0].n_entries && l.ops[0].e[k].index == lg[t].ops[0].e[i].index,
                  "legacy log lacks format-5 entry %llu", (unsigned long long)lg[t].ops[0].e[i].index);
        }
        CHECK(l.ops[0].n_entries >= ne, "legacy log is a superset");
        vt_steplog_free(&l);
    }
    for (int t = 0; t < 2; t++) free(enc[t]), vt_steplog_free(&lg[t]);
    for (int t = 0; t < 3; t++) free(out[t]), free(x[t]);
    free(terms);
    free(X);
    free(B);
}

/* Elements drawn to stress the fast path: near midpoints, powers of two, subnormals, zero,
 * FLT_MAX, with bounds spanning many scales. */
static double draw_x(vt_rng *g)
{
    int kind = (int)(vt_rng_next(g) % 8);
    double s = (vt_rng_next(g) & 1) ? -1.0 : 1.0;
    int ex = (int)(vt_rng_next(g) % 60) - 30;
    switch (kind) {
    case 0: return s * ldexp(1.0 + vt_rng_uniform(g), ex);
    case 1: { /* near a midpoint */
        float f = (float)ldexp(1.0 + vt_rng_uniform(g), ex);
        double ulp = nextafterf(f, INFINITY) - (double)f;
        return s * ((double)f + ulp / 2 + ldexp(vt_rng_uniform(g) - 0.5, ex - 40));
    }
    case 2: return s * ldexp(1.0, ex) * (1.0 + ldexp(vt_rng_uniform(g) - 0.5, -23)); /* near 2^k */
    case 3: return s * ldexp(vt_rng_uniform(g), -126 - (int)(vt_rng_next(g) % 30)); /* subnormal range */
    case 4: return s * ldexp(vt_rng_uniform(g), -140); /* near zero */
    case 5: return s * (double)FLT_MAX * (1.0 + ldexp(vt_rng_uniform(g) - 0.9, -24));
    case 6: return s * (double)(float)ldexp(1.0 + vt_rng_uniform(g), ex); /* exact FP32 */
    default: return s * ldexp(vt_rng_uniform(g), ex);
    }
}

static void test_fast_path_matches_spec(uint64_t seed)
{
    enum { ROWS = 37, COLS = 211 };
    vt_rng g = {seed};
    double *x = malloc(sizeof(double) * ROWS * COLS), *B = malloc(sizeof(double) * ROWS * COLS);
    float *out = malloc(sizeof(float) * ROWS * COLS);
    vt_steplog log;
    vt_steplog_init(&log, 0);
    long mismatches = 0, logged = 0;
    for (int rep = 0; rep < 40; rep++) {
        for (int i = 0; i < ROWS * COLS; i++) {
            x[i] = draw_x(&g);
            double rel = ldexp(1.0, -(int)(vt_rng_next(&g) % 60) - 10);
            B[i] = (vt_rng_next(&g) % 16 == 0) ? 0.0 : fabs(x[i]) * rel + ((vt_rng_next(&g) & 1) ? 0x1p-160 : 0);
            if (isinf(fabs(x[i]) * 2)) B[i] = 0;
        }
        vt_rctx c;
        vt_rctx_init(&c, VT_RMODE_RECORD, (vt_bound_cfg){.mode = VT_BOUND_PROVABLE});
        CHECK_OK(vt_rctx_begin_step(&c, 7, &log));
        vt_bounds b = {.kind = VT_BOUNDS_ARRAY, .b = B};
        vt_err err = vt_round(&c, 3, x, &b, ROWS, COLS, out);
        if (err == VT_ERR_DIVERGED) { /* an element rounded beyond FP32: check it really does */
            uint64_t k = c.fault.index;
            CHECK(k < ROWS * COLS && isinf((float)x[k]), "diverged at a finite element");
            continue;
        }
        CHECK(err == VT_OK, "vt_round: %s", vt_errmsg());
        const vt_oplog *o = &log.ops[0];
        uint64_t ei = 0;
        for (int k = 0; k < ROWS * COLS; k++) {
            float r;
            int lg;
            vt_log_entry e;
            vt_err e1 = vt_round_record1(x[k], B[k], &r, &lg, &e);
            int have = ei < o->n_entries && o->e[ei].index == (uint64_t)k;
            if (e1 != VT_OK || fb(r) != fb(out[k]) || lg != have ||
                (lg && (e.is_value != o->e[ei].is_value || e.up != o->e[ei].up || e.value_bits != o->e[ei].value_bits)))
                mismatches++;
            if (have) ei++, logged++;
        }
    }
    CHECK(mismatches == 0, "%ld elements where vt_round differs from the per-element rule", mismatches);
    CHECK(logged > 100, "the stress set should log many elements (%ld)", logged);
    vt_steplog_free(&log);
    free(x);
    free(B);
    free(out);
}

static void test_context(void)
{
    double x[6] = {1.0, 1.0 + 0x1p-24, 2.0, 3.0, 1.0 + 3 * 0x1p-24, 0.25};
    double B[6] = {0, 0x1p-50, 0, 0, 0x1p-50, 0};
    /* the exact evaluator: element e is terms[2e] + terms[2e + 1] (so X = x exactly), for the
     * 2 x 3 view (b) and the 3 x 2 view (b32) of the same six elements */
    static const float terms[12] = {1.0f, 0.0f, 1.0f, 0x1p-24f, 2.0f, 0.0f, 3.0f, 0.0f, 1.0f, 3 * 0x1p-24f, 0.25f, 0.0f};
    static const float one = 1.0f;
    vt_bounds b = {.kind = VT_BOUNDS_ARRAY, .b = B, .xa = terms, .xa_si = 6, .xa_sj = 2, .xa_sk = 1, .xb = &one, .xK = 2};
    vt_bounds b32 = b;
    b32.xa_si = 4;
    float out[6], out2[6];
    vt_steplog log;
    vt_steplog_init(&log, 0);
    vt_rctx c;
    vt_rctx_init(&c, VT_RMODE_RECORD, (vt_bound_cfg){.mode = VT_BOUND_PROVABLE});
    CHECK_OK(vt_rctx_begin_step(&c, 5, &log));
    CHECK_OK(vt_round(&c, 1, x, &b, 2, 3, out));
    CHECK_OK(vt_round(&c, 2, x, NULL, 1, 6, out));
    CHECK(vt_round(&c, 2, x, NULL, 1, 6, out) == VT_ERR_ARG, "op ids must increase");
    CHECK_OK(vt_rctx_end_step(&c));
    CHECK(log.n_ops == 2 && log.ops[0].n_entries == 2 && log.ops[1].n_entries == 0, "two records, two entries");
    CHECK(c.stats.logged_dir == 2 && c.stats.rounded == 12, "stats");

    vt_rctx r;
    vt_rctx_init(&r, VT_RMODE_REPLAY, (vt_bound_cfg){.mode = VT_BOUND_PROVABLE});
    double y[6];
    memcpy(y, x, sizeof y);
    y[1] += 0x1p-52; /* the replayer lands on the other side of both ties */
    y[4] -= 0x1p-52;
    CHECK_OK(vt_rctx_begin_step(&r, 5, &log));
    CHECK_OK(vt_round(&r, 1, y, &b, 2, 3, out2));
    float ref[6];
    vt_rctx_init(&c, VT_RMODE_RECORD, (vt_bound_cfg){.mode = VT_BOUND_PROVABLE});
    vt_steplog tmp;
    vt_steplog_init(&tmp, 0);
    CHECK_OK(vt_rctx_begin_step(&c, 5, &tmp));
    CHECK_OK(vt_round(&c, 1, x, &b, 2, 3, ref));
    CHECK(memcmp(ref, out2, sizeof ref) == 0, "replay with a different x reproduces the trainer's FP32");
    CHECK(r.stats.checked == 2, "two plausibility checks");
    CHECK(vt_rctx_end_step(&r) == VT_ERR_MISMATCH, "unconsumed record detected");
    CHECK(vt_round(&r, 3, y, NULL, 1, 6, out2) == VT_ERR_MISMATCH && r.fault.code == VT_ERR_MISMATCH,
          "wrong op id detected");
    CHECK_OK(vt_rctx_begin_step(&r, 5, &log));
    CHECK(vt_round(&r, 1, y, &b32, 3, 2, out2) == VT_OK, "same element count, other shape is fine");
    CHECK(vt_round(&r, 2, y, NULL, 1, 5, out2) == VT_ERR_MISMATCH, "element count mismatch detected");
    CHECK(vt_rctx_begin_step(&r, 6, &log) == VT_ERR_MISMATCH, "log of another step detected");

    /* an entry moved from element 1 to element 3 (3.0, B=0: exact): the now unlogged element 1
     * is unstable for the replayer too -> missing entry, found first */
    log.ops[0].e[0].index = 3;
    CHECK_OK(vt_rctx_begin_step(&r, 5, &log));
    CHECK(vt_round(&r, 1, y, &b, 2, 3, out2) == VT_ERR_IMPLAUSIBLE, "moved entry rejected");
    CHECK(r.fault.step == 5 && r.fault.op_id == 1 && r.fault.index == 1 && !r.fault.has_entry,
          "fault names step 5 op 1 index 1 (got %llu %u %llu)", (unsigned long long)r.fault.step, r.fault.op_id,
          (unsigned long long)r.fault.index);
    CHECK(strstr(vt_errmsg(), "step 5, operation 1, index 1: missing log entry") != NULL, "message: %s", vt_errmsg());
    /* element 4's entry moved to element 3 (3.0, B = 0, no boundary near). Manifest format 5: an
     * entry there is unneeded, refused at element 3 (one state, one log) */
    log.ops[0].e[0].index = 1;
    log.ops[0].e[1].index = 3;
    CHECK_OK(vt_rctx_begin_step(&r, 5, &log));
    CHECK(vt_round(&r, 1, y, &b, 2, 3, out2) == VT_ERR_IMPLAUSIBLE, "entry moved off a boundary: unneeded entry");
    CHECK(r.fault.step == 5 && r.fault.op_id == 1 && r.fault.index == 3 && r.fault.has_entry,
          "fault names step 5 op 1 index 3 (got %llu %u %llu)", (unsigned long long)r.fault.step, r.fault.op_id,
          (unsigned long long)r.fault.index);
    CHECK(strstr(vt_errmsg(), "step 5, operation 1, index 3: unneeded log entry") != NULL, "message: %s", vt_errmsg());
    /* formats 1-4 (legacy_log): the entry is moot there and gives 3.0; element 4 is then the
     * missing one */
    vt_rctx rl;
    vt_rctx_init(&rl, VT_RMODE_REPLAY, (vt_bound_cfg){.mode = VT_BOUND_PROVABLE, .legacy_log = 1});
    CHECK_OK(vt_rctx_begin_step(&rl, 5, &log));
    CHECK(vt_round(&rl, 1, y, &b, 2, 3, out2) == VT_ERR_IMPLAUSIBLE, "entry moved off a boundary: missing entry");
    CHECK(rl.fault.step == 5 && rl.fault.op_id == 1 && rl.fault.index == 4 && !rl.fault.has_entry,
          "fault names step 5 op 1 index 4 (got %llu %u %llu)", (unsigned long long)rl.fault.step, rl.fault.op_id,
          (unsigned long long)rl.fault.index);
    CHECK(out2[3] == 3.0f, "the moot entry left element 3 at its exact value");
    CHECK(strstr(vt_errmsg(), "step 5, operation 1, index 4") != NULL, "message: %s", vt_errmsg());
    /* a value entry far from the exact value: rejected, naming its element */
    log.ops[0].e[1].index = 4;
    log.ops[0].e[1].is_value = 1;
    log.ops[0].e[1].value_bits = fb(1.5f);
    CHECK_OK(vt_rctx_begin_step(&r, 5, &log));
    CHECK(vt_round(&r, 1, y, &b, 2, 3, out2) == VT_ERR_IMPLAUSIBLE && r.fault.index == 4 && r.fault.has_entry,
          "forged value entry rejected at index 4");

    /* divergence names step and op */
    double bad[3] = {1.0, NAN, 2.0};
    vt_rctx_init(&c, VT_RMODE_RECORD, (vt_bound_cfg){.mode = VT_BOUND_PROVABLE});
    CHECK_OK(vt_rctx_begin_step(&c, 9, &tmp));
    CHECK(vt_round(&c, 4, bad, NULL, 1, 3, out) == VT_ERR_DIVERGED, "NaN diverges");
    CHECK(strstr(vt_errmsg(), "diverged at step 9, operation 4, index 1") != NULL, "message: %s", vt_errmsg());
    double big[2] = {1.0, 1e300};
    double bb[2] = {1e-10, 1e-10};
    vt_bounds ab = {.kind = VT_BOUNDS_ARRAY, .b = bb};
    CHECK_OK(vt_rctx_begin_step(&c, 10, &tmp));
    CHECK(vt_round(&c, 4, big, &ab, 1, 2, out) == VT_ERR_DIVERGED && c.fault.index == 1, "overflow diverges");
    vt_steplog_free(&log);
    vt_steplog_free(&tmp);
}

static void test_bound_coef(void)
{
    vt_bound_cfg pv = {.mode = VT_BOUND_PROVABLE}, pb = {.mode = VT_BOUND_PROBABILISTIC, .lambda = 10.0};
    CHECK(vt_bound_coef(&pv, 1) == 0 && vt_bound_coef(&pv, 0) == 0, "single term exact");
    CHECK(vt_bound_coef(&pv, 2) >= 0x1p-53, "two terms: at least u");
    CHECK(vt_bound_coef(&pv, VT_MAX_REDUCTION + 1) < 0, "over the limit");
    double prev = 0;
    for (uint64_t n = 2; n <= (1u << 20); n *= 2) {
        double c = vt_bound_coef(&pv, n), g = (double)(n - 1) * 0x1p-53;
        CHECK(c > prev && c >= g / (1 - g), "monotone and >= gamma_{n-1} at n=%llu", (unsigned long long)n);
        CHECK(vt_bound_coef(&pb, n) <= c, "probabilistic <= provable at %llu", (unsigned long long)n);
        prev = c;
    }
    CHECK(vt_bound_coef(&pb, 4096) <= 0.25 * vt_bound_coef(&pv, 4096), "probabilistic at 4096 < quarter");
    CHECK(vt_bound_failure_prob(&pb, 4096) < 1e-17, "failure probability tiny at lambda 10 (%g)",
          vt_bound_failure_prob(&pb, 4096));
    CHECK(vt_bound_failure_prob(&pv, 4096) == 0, "provable never fails");
}

/* vt_bound_of_terms as defined (docs/rounding.md 2.1): c(nnz) * sum |a b| over the non-zero
 * products in four lanes, 0 when nnz <= 1 or vt_sum_is_exact(s, emin) for emin the lowest set bit
 * of the non-zero products - written out plainly, the reference of the branch-free
 * implementation. */
static double bound_of_terms_ref(const vt_bound_cfg *cfg, size_t K, const float *a, size_t inca, const float *b,
                                 size_t incb)
{
    double sl[4] = {0, 0, 0, 0};
    uint64_t nnz = 0;
    int emin = 1 << 20;
    size_t whole = K - K % 4;
    for (size_t k = 0; k < K; k++) {
        float fa = a[k * inca], fb = b[k * incb];
        double p = fabs((double)fa * (double)fb);
        if (p == 0.0) continue;
        sl[k < whole ? k % 4 : 0] += p;
        nnz++;
        int e = vt_f32_lsb_exp(vt_f32_bits(fa)) + vt_f32_lsb_exp(vt_f32_bits(fb));
        if (e < emin) emin = e;
    }
    double s = (sl[0] + sl[1]) + (sl[2] + sl[3]);
    if (nnz <= 1 || vt_sum_is_exact(s, emin)) return 0.0;
    return vt_bound_coef_red(cfg, nnz, K) * s;
}

/* the implementation against its definition on terms chosen to sit at and near the exactness
 * limit: dyadic values of few bits over a range of exponents (many exact sums), full-precision
 * values, zeros, subnormals, huge and tiny magnitudes, infinities and NaNs; strided and constant
 * second factors */
static void test_bound_of_terms(uint64_t seed)
{
    vt_rng r = {seed ^ 0xb0b0};
    vt_bound_cfg cfg = {VT_BOUND_PROVABLE, 0, VT_ROUNDING_EXACT, 0, 0};
    enum { KMAX = 700 };
    static float a[2 * KMAX], b[2 * KMAX];
    long same = 0, zero = 0;
    for (int it = 0; it < 4000; it++) {
        size_t K = 1 + (size_t)(vt_rng_uniform(&r) * (it % 5 == 0 ? KMAX : 40));
        int kind = it % 7, span = 1 + (int)(vt_rng_uniform(&r) * 60);
        for (size_t k = 0; k < 2 * K; k++) {
            double u = vt_rng_uniform(&r), v;
            switch (kind) {
            case 0: v = (double)(int)(u * 64) - 32; break;                                  /* small integers */
            case 1: v = ldexp((double)(int)(u * 1024), (int)(vt_rng_uniform(&r) * span) - span / 2); break;
            case 2: v = (u - 0.5) * ldexp(1.0, (int)(vt_rng_uniform(&r) * 40) - 20); break; /* full precision */
            case 3: v = u < 0.5 ? 0.0 : (double)(int)(u * 16); break;                       /* zeros */
            case 4: v = ldexp((double)(int)(u * 255) + 1, -140 - (int)(vt_rng_uniform(&r) * 9)); break;
            case 5: v = ldexp(u + 0.5, 100 + (int)(vt_rng_uniform(&r) * 27)); break;         /* huge */
            default: v = u < 0.02 ? (u < 0.01 ? INFINITY : NAN) : ldexp(u, (int)(u * 20)); break;
            }
            (k < K ? a : b)[k < K ? k : k - K] = (float)v;
        }
        size_t incb = it % 3 == 0 ? 0 : 1; /* a constant factor (the sums' 1.0f) or a strided one */
        if (it % 3 == 0) b[0] = it % 2 ? 1.0f : 0.0625f;
        double want = bound_of_terms_ref(&cfg, K, a, 1, b, incb), got = vt_bound_of_terms(&cfg, K, a, 1, b, incb);
        int eq = (isnan(want) && isnan(got)) || vt_f64_bits(want) == vt_f64_bits(got);
        /* the same bound from the products (vt_reduce's fused form), bit for bit */
        static double x[KMAX];
        for (size_t k = 0; k < K; k++) x[k] = (double)a[k] * (double)b[k * incb];
        double fromx = vt_bound_of_products(&cfg, K, x);
        CHECK((isnan(got) && isnan(fromx)) || vt_f64_bits(got) == vt_f64_bits(fromx),
              "iteration %d (kind %d, K %zu): bound from the products %.17g, from the terms %.17g", it, kind, K, fromx,
              got);
        if (eq) same++;
        if (want == 0.0) zero++;
        CHECK(eq, "iteration %d (kind %d, K %zu): bound %.17g, its definition %.17g", it, kind, K, got, want);
        if (!eq) break;
    }
    printf("vt_bound_of_terms: %ld of 4000 term sets equal to the definition and to vt_bound_of_products (%ld of them "
           "exact sums: bound 0)\n",
           same, zero);
    CHECK(zero > 400 && zero < 3600, "the cases must exercise both sides of the exactness test (%ld exact)", zero);
}

int main(void)
{
    uint64_t seed = vt_test_seed(12345);
    test_bound_of_terms(seed);
    test_zero_sign();
    test_subnormal();
    test_exponent_boundary();
    test_ties_and_exact();
    test_overflow_nan();
    test_plausibility();
    test_one_log_rules();
    test_one_log_vt_round(seed);
    test_fast_path_matches_spec(seed);
    test_context();
    test_bound_coef();
    return vt_test_finish("test_rounding");
}
