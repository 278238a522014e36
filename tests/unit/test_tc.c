/* test_tc - the tensor-core emulator (kernels/vt_tc.c; the model: docs/tensorcore.md) on the CPU:
 * (1) FP32 -> BF16 / FP16 / E4M3 by round-to-nearest-even against the definition (the nearest of
 *     the type's values, found by search in a table decoded with FP64 arithmetic; ties to the even
 *     encoding), over every 251st FP32 bit pattern and every value's midpoint neighbourhood; every
 *     value of each type round-tripped;
 * (2) the group against an independent model of the same semantics written in FP64 arithmetic
 *     (ilogb, ldexp, trunc, floor; exact by construction: every product and every truncated term
 *     is an FP64 integer below 2^53), on random and adversarial groups, every model and every
 *     parameter variant;
 * (3) properties: the products' order within a group does not matter; truncation is not rounding
 *     (examples where the result differs from RN32 of the exact sum); the GEMM is the group fold by
 *     hand, and the fold's order is part of the definition;
 * (4) the known-answer vectors (probe tiles with expected bits derived by hand in the comments, and
 *     a digest of 10,000 generated groups per model), printed as "KAT ..." lines and kept in
 *     docs/tensorcore.md for the GPU check;
 * (5) the questions only hardware answers (issue 41; vt_tc_probes.h QPROBES): each variant's result -
 *     the E4M3 path (wgmma's model, FP16's in two splits), zero products in the maximum exponent, the
 *     sign of an exact zero, the maximum carry - derived by hand, equal to the emulator's with explicit
 *     parameters and to the reference model's, every two variants told apart by some probe.
 * CPU only: agreement with real tensor cores is not tested here. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/vt_tc.h"
#include "vt_tc_probes.h"
#include "vt_test.h"

static float f32(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static uint32_t bits32(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* ------------------------------------------------------------------ (1) conversions */

typedef struct {
    int mbits, ebits, bias, has_inf;
} tfmt;
static const tfmt TF[3] = {{7, 8, 127, 1}, {10, 5, 15, 1}, {3, 4, 7, 0}};
static const char *TNAME[3] = {"bf16", "fp16", "e4m3"};

/* the value of a type's bits, by FP64 arithmetic (NaN for NaN) */
static double ref_decode(int type, unsigned b)
{
    const tfmt *f = &TF[type];
    int fmax = (1 << f->ebits) - 1;
    int s = (b >> (f->ebits + f->mbits)) & 1, field = (b >> f->mbits) & fmax, frac = b & ((1 << f->mbits) - 1);
    double v;
    if (f->has_inf && field == fmax) v = frac ? NAN : INFINITY;
    else if (!f->has_inf && field == fmax && frac == (1 << f->mbits) - 1) v = NAN;
    else if (field == 0) v = ldexp((double)frac, 1 - f->bias - f->mbits);
    else v = ldexp(1.0 + ldexp((double)frac, -f->mbits), field - f->bias);
    return s ? -v : v;
}

static double g_val[3][1 << 15]; /* positive values, index = bits (monotone) */
static unsigned g_maxfin[3];

static void tables(void)
{
    for (int t = 0; t < 3; t++) {
        const tfmt *f = &TF[t];
        unsigned n = 1u << (f->ebits + f->mbits);
        g_maxfin[t] = 0;
        for (unsigned b = 0; b < n; b++) {
            g_val[t][b] = ref_decode(t, b);
            if (isfinite(g_val[t][b])) g_maxfin[t] = b;
        }
    }
}

/* RNE by the definition: the nearest value, ties to the even encoding; beyond the largest finite
 * value the next "value" is 2^(emax+1), encoded as inf (IEEE types), or the result saturates (E4M3). */
static unsigned ref_from_f32(int type, float x)
{
    const tfmt *f = &TF[type];
    unsigned sg = signbit(x) ? 1u << (f->ebits + f->mbits) : 0;
    unsigned fmax = (1u << f->ebits) - 1;
    if (isnan(x)) return sg | (f->has_inf ? (fmax << f->mbits | 1u << (f->mbits - 1)) : (fmax << f->mbits | 7u));
    double ax = fabs((double)x);
    unsigned mf = g_maxfin[type];
    double top = f->has_inf ? ldexp(1.0, (int)fmax - f->bias) : INFINITY; /* the value of the inf code */
    if (ax >= g_val[type][mf]) {
        if (!f->has_inf) return sg | mf;
        if (isinf(ax)) return sg | (mf + 1);
        double mid = (g_val[type][mf] + top) / 2;
        return sg | (ax < mid ? mf : mf + 1); /* a tie goes to mf + 1 (even) */
    }
    unsigned lo = 0, hi = mf; /* val[lo] <= ax < val[hi] */
    while (hi - lo > 1) {
        unsigned m = (lo + hi) / 2;
        if (g_val[type][m] <= ax) lo = m;
        else hi = m;
    }
    if (g_val[type][lo] == ax) return sg | lo;
    double mid = (g_val[type][lo] + g_val[type][hi]) / 2;
    if (ax < mid) return sg | lo;
    if (ax > mid) return sg | hi;
    return sg | ((lo & 1) ? hi : lo);
}

static void test_conversions(void)
{
    for (int t = 0; t < 3; t++) {
        long bad = 0, n = 0;
        /* a stride over every FP32 bit pattern */
        for (uint64_t u = 0; u < (1ull << 32); u += 251) {
            uint32_t x = (uint32_t)u;
            unsigned want = ref_from_f32(t, f32(x)), got = vt_tc_from_f32((vt_tc_type)t, x);
            n++;
            if (want != got && bad++ < 5) CHECK(0, "%s: from_f32(0x%08X) = 0x%04X, want 0x%04X", TNAME[t], x, got, want);
        }
        /* every value, every midpoint and their FP32 neighbours, both signs */
        unsigned mf = g_maxfin[t];
        for (unsigned b = 0; b <= mf; b++) {
            double next = b < mf ? g_val[t][b + 1] : (TF[t].has_inf ? ldexp(1.0, (1 << TF[t].ebits) - 1 - TF[t].bias)
                                                                  : 2 * g_val[t][b]);
            float pts[6] = {(float)g_val[t][b], (float)((g_val[t][b] + next) / 2), 0, 0, 0, 0};
            pts[2] = nextafterf(pts[1], 0), pts[3] = nextafterf(pts[1], INFINITY);
            pts[4] = nextafterf(pts[0], 0), pts[5] = nextafterf(pts[0], INFINITY);
            for (int k = 0; k < 6; k++)
                for (int s = 0; s < 2; s++) {
                    float x = s ? -pts[k] : pts[k];
                    unsigned want = ref_from_f32(t, x), got = vt_tc_from_f32((vt_tc_type)t, bits32(x));
                    n++;
                    if (want != got && bad++ < 5)
                        CHECK(0, "%s: from_f32(%a) = 0x%04X, want 0x%04X", TNAME[t], (double)x, got, want);
                }
        }
        float sp[] = {INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, -FLT_MAX, FLT_MIN, 0x1p-149f, 0.0f, -0.0f};
        for (size_t k = 0; k < sizeof sp / sizeof sp[0]; k++) {
            unsigned want = ref_from_f32(t, sp[k]), got = vt_tc_from_f32((vt_tc_type)t, bits32(sp[k]));
            n++;
            if (want != got && bad++ < 5) CHECK(0, "%s: from_f32(%a) = 0x%04X, want 0x%04X", TNAME[t], (double)sp[k], got, want);
        }
        /* round trip: every encoding */
        unsigned nb = 1u << (TF[t].ebits + TF[t].mbits + 1);
        for (unsigned b = 0; b < nb; b++) {
            double v = ref_decode(t, b);
            float f = f32(vt_tc_to_f32((vt_tc_type)t, (uint16_t)b));
            n++;
            if (isnan(v)) {
                if (!isnan(f) && bad++ < 5) CHECK(0, "%s: to_f32(0x%04X) = %a, want NaN", TNAME[t], b, (double)f);
                continue;
            }
            if (((double)f != v || !signbit(f) != !signbit(v)) && bad++ < 5)
                CHECK(0, "%s: to_f32(0x%04X) = %a, want %a", TNAME[t], b, (double)f, v);
            if (vt_tc_from_f32((vt_tc_type)t, bits32(f)) != b && bad++ < 5)
                CHECK(0, "%s: 0x%04X does not round-trip", TNAME[t], b);
        }
        CHECK(bad == 0, "%s: %ld of %ld conversions wrong", TNAME[t], bad, n);
        printf("conversions %s: %ld checked against the definition\n", TNAME[t], n);
    }
}

/* ------------------------------------------------------------------ (2) the reference model */

/* The documented semantics in FP64 arithmetic (docs/tensorcore.md "The group"), written apart from
 * vt_tc.c's integer code. */
static uint32_t ref_group(const vt_tc_arch *A, uint32_t cb, const uint16_t *a, const uint16_t *b, int n)
{
    const tfmt *f = &TF[A->type];
    /* via_fp16: the E4M3 values are FP16 values, whose emin is -14 (no E4M3 value is below 2^-9) */
    int emin = A->via_fp16 ? -14 : 1 - f->bias;
    double c = (double)f32(cb);
    double t[65];
    int nt = 0, nan = isnan(c), pinf = c == INFINITY, ninf = c == -INFINITY, allneg0 = 1;
    int E = A->e_floor, zeros = A->zero_exp == VT_TC_ZERO_EXP_FIELDS;
    if (c == 0) {
        allneg0 = signbit(c) != 0;
        if (zeros && -126 > E) E = -126;
    } else if (isfinite(c)) {
        t[nt++] = c, allneg0 = 0;
        int e = ilogb(c) < -126 ? -126 : ilogb(c);
        if (e > E) E = e;
    }
    for (int i = 0; i < n; i++) {
        double x = ref_decode(A->type, a[i]), y = ref_decode(A->type, b[i]);
        if (isnan(x) || isnan(y)) nan = 1;
        else if (isinf(x) || isinf(y)) {
            if (x == 0 || y == 0) nan = 1;
            else if ((x < 0) != (y < 0)) ninf = 1;
            else pinf = 1;
        } else if (x == 0 || y == 0) {
            allneg0 &= (signbit(x) != 0) != (signbit(y) != 0);
            /* counted: ilogb(0) is below every emin, so a zero's exponent is emin */
            int e = (ilogb(x) < emin ? emin : ilogb(x)) + (ilogb(y) < emin ? emin : ilogb(y)) + A->prod_eoff;
            if (zeros && e > E) E = e;
        } else {
            t[nt++] = x * y; /* exact: at most 22 significant bits */
            allneg0 = 0;
            int e = (ilogb(x) < emin ? emin : ilogb(x)) + (ilogb(y) < emin ? emin : ilogb(y)) + A->prod_eoff;
            if (e > E) E = e;
        }
    }
    if (nan || (pinf && ninf)) return A->nan_bits;
    if (pinf || ninf) return pinf ? 0x7F800000u : 0xFF800000u;
    if (nt == 0) return allneg0 && A->zero_sign == VT_TC_ZERO_IEEE ? 0x80000000u : 0;
    if (zeros && n < A->group && 2 * emin + A->prod_eoff > E) E = 2 * emin + A->prod_eoff; /* the missing zeros */
    int B = E - A->width + 1;
    double S = 0;
    for (int i = 0; i < nt; i++) {
        double q = ldexp(t[i], -B);
        S += A->align == VT_TC_ALIGN_RZ ? trunc(q) : floor(q); /* integers below 2^(w+2): exact */
    }
    if (S == 0) return 0;
    if (fabs(S) >= ldexp(1, A->width)) {
        int u = ilogb(S) - A->width + 1;
        S = trunc(ldexp(S, -u));
        B += u;
    }
    double v = ldexp(S, B);
    float r;
    if (A->out == VT_TC_OUT_RNE) {
        r = (float)v;
    } else if (fabs(v) >= 0x1p128) {
        r = v > 0 ? INFINITY : -INFINITY;
    } else if (fabs(v) >= 0x1p-126) {
        int e = ilogb(v);
        r = (float)ldexp(trunc(ldexp(v, 23 - e)), e - 23);
    } else {
        r = (float)ldexp(trunc(ldexp(v, 149)), -149);
    }
    if (isinf(r) && !A->inf_on_overflow) r = r > 0 ? FLT_MAX : -FLT_MAX;
    return bits32(r);
}

static uint64_t fnv(uint64_t h, uint32_t x)
{
    for (int i = 0; i < 4; i++) h = (h ^ ((x >> (8 * i)) & 0xFF)) * 0x100000001b3ull;
    return h;
}

static long g_groups;

static void check_group(const vt_tc_arch *A, uint32_t c, const uint16_t *a, const uint16_t *b, int n, const char *what)
{
    uint32_t got = vt_tc_group(A, c, a, b, n), want = ref_group(A, c, a, b, n);
    g_groups++;
    if (got != want) {
        CHECK(0, "%s %s: c=0x%08X: emulator 0x%08X, reference 0x%08X", A->name, what, c, got, want);
        for (int i = 0; i < n; i++) fprintf(stderr, "  a[%d]=0x%04X b[%d]=0x%04X\n", i, a[i], i, b[i]);
    }
}

#define N_MODELS 6
static const vt_tc_arch *const MODELS[N_MODELS] = {&vt_tc_sm90_bf16, &vt_tc_sm90_fp16, &vt_tc_sm80_bf16,
                                                   &vt_tc_sm80_fp16, &vt_tc_sm90_e4m3, &vt_tc_sm90_e4m3f16};

static void test_reference(void)
{
    const vt_tc_arch *const *base = MODELS;
    uint64_t seed = vt_test_seed(28);
    long before = vt_test_failed;
    for (size_t m = 0; m < N_MODELS; m++) {
        for (int variant = 0; variant < 9; variant++) {
            vt_tc_arch A = *base[m];
            if (variant == 1) A.align = VT_TC_ALIGN_FLOOR;
            if (variant == 2) A.out = VT_TC_OUT_RNE;
            if (variant == 3) A.prod_eoff = 1;
            if (variant == 4) A.e_floor = -300, A.inf_on_overflow = 0;
            if (variant == 5) A.width = 24, A.align = VT_TC_ALIGN_FLOOR, A.out = VT_TC_OUT_RNE;
            if (variant == 6) A.zero_exp = VT_TC_ZERO_EXP_FIELDS;
            if (variant == 7) A.zero_sign = VT_TC_ZERO_POS;
            if (variant == 8) A.zero_exp = VT_TC_ZERO_EXP_FIELDS, A.zero_sign = VT_TC_ZERO_POS, A.e_floor = -300, A.prod_eoff = 1;
            CHECK_OK(vt_tc_arch_check(&A));
            uint64_t s = seed ^ (m * 7 + (uint64_t)variant) * 0x1234567ull;
            int groups = variant == 0 ? 40000 : 8000;
            for (int g = 0; g < groups; g++) {
                uint16_t a[64], b[64];
                int mode = (int)(sm64(&s) % 8);
                int cm = mode < 4 ? mode : 1, im = mode < 4 ? mode : 1;
                if (mode == 4) cm = 2;          /* a tiny accumulator with normal products */
                if (mode == 5) im = 2, cm = 1;  /* tiny products under a normal accumulator */
                if (mode == 6) im = 3, cm = 3;  /* both near the top of the range */
                int n = A.group - (int)(sm64(&s) % 3 == 0 ? sm64(&s) % (uint64_t)A.group : 0);
                for (int i = 0; i < n; i++) {
                    a[i] = gen_in(A.type, &s, im);
                    b[i] = gen_in(A.type, &s, mode == 7 ? 1 + (int)(sm64(&s) % 3) : im);
                }
                uint32_t c = gen_c(&s, cm);
                if (mode == 1 && n > 1) { /* cancellation: a product that cancels the accumulator's top */
                    b[0] = TF[A.type].bias << TF[A.type].mbits; /* 1.0 */
                    a[0] = vt_tc_from_f32(A.type, bits32(-f32(c)));
                }
                if (g % 97 == 0) c = sm64(&s) & 1 ? 0x80000000u : 0; /* signed zero accumulators */
                if (variant >= 6 && g % 3 == 0) /* zero factors of both signs (in every product when g % 9 == 0) */
                    for (int i = 0; i < n; i++)
                        if (g % 9 == 0 || sm64(&s) % 4 == 0) {
                            uint16_t z = (uint16_t)((sm64(&s) & 1) << (TF[A.type].ebits + TF[A.type].mbits));
                            if (sm64(&s) & 1) a[i] = z;
                            else b[i] = z;
                        }
                check_group(&A, c, a, b, n, "random");
            }
        }
    }
    CHECK(vt_test_failed == before, "the emulator and the reference model disagree");
    printf("reference model: %ld random groups over %d models x 9 parameter variants agree bit for bit\n", g_groups,
           N_MODELS);
}

/* ------------------------------------------------------------------ (4) probe tiles (hand-derived) */

static void test_probes(void)
{
    static const char *VAR[] = {"", "+align-floor", "+out-rne", "+floor-off", "+sat"};
    for (size_t k = 0; k < sizeof PROBES / sizeof PROBES[0]; k++) {
        const probe *p = &PROBES[k];
        vt_tc_arch A = probe_arch(p);
        uint16_t a[32], b[32];
        for (int i = 0; i < p->n; i++) a[i] = p->rep ? p->a[0] : p->a[i], b[i] = p->rep ? p->b[0] : p->b[i];
        uint32_t got = vt_tc_group(&A, p->c, a, b, p->n);
        CHECK(got == p->want, "probe %s: 0x%08X, hand-derived 0x%08X", p->name, got, p->want);
        check_group(&A, p->c, a, b, p->n, p->name);
        printf("KAT %-22s %s%s c=0x%08X n=%d%s a=", p->name, A.name, VAR[p->variant], p->c, p->n, p->rep ? "(same pair)" : "");
        for (int i = 0; i < (p->rep ? 1 : p->n); i++) printf("%s%04X", i ? "," : "", p->a[i]);
        printf(" b=");
        for (int i = 0; i < (p->rep ? 1 : p->n); i++) printf("%s%04X", i ? "," : "", p->b[i]);
        printf(" -> 0x%08X\n", got);
    }
    /* truncation is not rounding: the probes where the result differs from RN32(exact) */
    int differ = 0;
    for (size_t k = 0; k < sizeof PROBES / sizeof PROBES[0]; k++)
        if (PROBES[k].rn && PROBES[k].rn != PROBES[k].want) differ++;
    CHECK(differ >= 5, "only %d probes differ from RN32", differ);
}

/* The questions only hardware answers (vt_tc_probes.h QPROBES; docs/tensorcore.md "The unknowns"): each
 * variant's result by the emulator with explicit parameters (q_emulate) equals the hand-derived one and
 * the reference model's; every mode's variant is what the built-in model computes; every two variants
 * of a question are told apart by at least one probe. */
static void test_questions(void)
{
    int told[VT_Q_COUNT][VT_Q_MAXVAR][VT_Q_MAXVAR] = {{{0}}};
    for (size_t k = 0; k < sizeof QPROBES / sizeof QPROBES[0]; k++) {
        const qprobe *p = &QPROBES[k];
        const int K = q_k(p);
        uint16_t a[32], b[32];
        q_row(p, a, b);
        for (int v = 0; v < Q_NVAR[p->q]; v++) {
            uint32_t got = q_emulate(p, v, p->c, a, b), ref;
            CHECK(got == p->want[v], "question probe %s, variant %s: 0x%08X, hand-derived 0x%08X", p->name,
                  Q_VAR[p->q][v], got, p->want[v]);
            if (p->q == VT_Q_E4M3) { /* the reference model's fold, the halves picked here */
                if (v == 0) {
                    ref = ref_group(&vt_tc_sm90_e4m3, p->c, a, b, 32);
                } else {
                    uint16_t h[2][2][16];
                    int m[2] = {0, 0};
                    for (int i = 0; i < 32; i++) {
                        int half = v == 1 ? i / 16 : (i & 2) != 0;
                        h[half][0][m[half]] = a[i], h[half][1][m[half]++] = b[i];
                    }
                    ref = ref_group(&vt_tc_sm90_e4m3f16, p->c, h[0][0], h[0][1], 16);
                    ref = ref_group(&vt_tc_sm90_e4m3f16, ref, h[1][0], h[1][1], 16);
                }
            } else {
                vt_tc_arch A = *p->arch;
                if (p->q == VT_Q_ZERO_EXP) A.zero_exp = (vt_tc_zero_exp)v;
                if (p->q == VT_Q_ZERO_SIGN) A.zero_sign = (vt_tc_zero_sign)v;
                ref = ref_group(&A, p->c, a, b, K);
                /* the listed products alone (a partial group: its missing products are the tile's zeros) */
                CHECK(vt_tc_group(&A, p->c, a, b, p->n) == got, "question probe %s: %d products give 0x%08X, the "
                      "tile 0x%08X", p->name, p->n, vt_tc_group(&A, p->c, a, b, p->n), got);
            }
            CHECK(ref == got, "question probe %s, variant %s: the reference model 0x%08X, the emulator 0x%08X",
                  p->name, Q_VAR[p->q][v], ref, got);
            printf("KAT %-22s %-38s %-52s c=0x%08X n=%d%s a=", p->name, Q_NAME[p->q], Q_VAR[p->q][v], p->c, p->n,
                   p->rep ? "(same pair)" : "");
            for (int i = 0; i < (p->rep ? 1 : p->n); i++) printf("%s%04X", i ? "," : "", p->a[i]);
            printf(" b=");
            for (int i = 0; i < (p->rep ? 1 : p->n); i++) printf("%s%04X", i ? "," : "", p->b[i]);
            printf(" -> 0x%08X\n", got);
            for (int u = 0; u < v; u++)
                if (p->want[u] != p->want[v]) told[p->q][u][v] = 1;
        }
        if (p->q != VT_Q_E4M3) /* the built-in model is the modes' variant */
            CHECK(vt_tc_group(p->arch, p->c, a, b, K) == p->want[Q_MODE_VAR[p->q]], "question probe %s: %s is not "
                  "variant %s", p->name, p->arch->name, Q_VAR[p->q][Q_MODE_VAR[p->q]]);
    }
    for (int q = 0; q < VT_Q_COUNT; q++)
        for (int v = 1; v < Q_NVAR[q]; v++)
            for (int u = 0; u < v; u++)
                CHECK(told[q][u][v], "%s: no probe tells \"%s\" from \"%s\"", Q_NAME[q], Q_VAR[q][u], Q_VAR[q][v]);
    /* the GEMM of a variant: E4M3 through FP16 is sm90-e4m3f16's fold; zero products counted change a
     * GEMM whose A has a zero where B is huge (0 * 2^15 beside 2^-14 * 2^-14 in FP16) */
    vt_tc_arch zc = vt_tc_sm90_fp16;
    zc.zero_exp = VT_TC_ZERO_EXP_FIELDS;
    float X[2] = {0.0f, 0x1p-14f}, Y[2] = {0x1p15f, 0x1p-14f}, Z = 1;
    CHECK_OK(vt_tc_gemm(&vt_tc_sm90_fp16, 1, 1, 2, X, Y, &Z));
    CHECK(bits32(Z) == 0x31800000u, "the sm90-fp16 GEMM of zero-huge-fp16: 0x%08X", bits32(Z));
    CHECK_OK(vt_tc_gemm(&zc, 1, 1, 2, X, Y, &Z));
    CHECK(bits32(Z) == 0, "the zero-counted GEMM of zero-huge-fp16: 0x%08X", bits32(Z));
    /* a group of no product: its missing products are +0 * +0 (the GPU's tile), which the counted
     * variant counts (FP16: 2 emin = -28, bottom 2^-53): c = 2^-100 is cut to +0; not counted: kept */
    uint16_t z16[16] = {0};
    CHECK(vt_tc_group(&zc, 0x0D800000u, z16, z16, 0) == 0 && vt_tc_group(&zc, 0x0D800000u, z16, z16, 16) == 0,
          "counted zeros: c = 2^-100 alone");
    CHECK(vt_tc_group(&vt_tc_sm90_fp16, 0x0D800000u, z16, z16, 0) == 0x0D800000u &&
              vt_tc_group(&vt_tc_sm90_fp16, 0x0D800000u, z16, z16, 16) == 0x0D800000u,
          "zeros not counted: c = 2^-100 alone");
}

/* The digest of generated groups per model (docs/tensorcore.md "Known answers"): seed 28,
 * 10,000 groups of the full group size, inputs gen_in mode 1 (exponents within +-3 of 1), accumulators
 * gen_c mode 1; FNV-1a 64 over the little-endian result bits. */
static const struct {
    const vt_tc_arch *arch;
    uint64_t digest;
} DIGESTS[] = {
    {&vt_tc_sm90_bf16, 0x2490054916407ac3ull}, {&vt_tc_sm90_fp16, 0xa2015bdea8606edfull},
    {&vt_tc_sm80_bf16, 0x86c10046d036f60cull}, {&vt_tc_sm80_fp16, 0xc6bdffc371b84efcull},
    {&vt_tc_sm90_e4m3, 0x30a10639c8dbf97bull}, {&vt_tc_sm90_e4m3f16, 0x79425980b13ff3fdull},
};

static void test_digests(void)
{
    for (size_t m = 0; m < sizeof DIGESTS / sizeof DIGESTS[0]; m++) {
        const vt_tc_arch *A = DIGESTS[m].arch;
        uint64_t s = 28, h = 0xcbf29ce484222325ull;
        for (int g = 0; g < 10000; g++) {
            uint16_t a[64], b[64];
            for (int i = 0; i < A->group; i++) a[i] = gen_in(A->type, &s, 1), b[i] = gen_in(A->type, &s, 1);
            uint32_t c = gen_c(&s, 1);
            uint32_t r = vt_tc_group(A, c, a, b, A->group);
            CHECK(r == ref_group(A, c, a, b, A->group), "digest group %d of %s", g, A->name);
            h = fnv(h, r);
        }
        printf("KAT digest %s 10000 groups: %016llx\n", A->name, (unsigned long long)h);
        CHECK(h == DIGESTS[m].digest, "%s digest %016llx, the table has %016llx", A->name, (unsigned long long)h,
              (unsigned long long)DIGESTS[m].digest);
    }
}

/* ------------------------------------------------------------------ (3) properties */

static void test_properties(void)
{
    uint64_t s = vt_test_seed(28) ^ 0xABCDEF;
    /* the order of the products within a group does not matter */
    const vt_tc_arch *const *all = MODELS;
    long bad = 0;
    for (int m = 0; m < N_MODELS; m++)
        for (int g = 0; g < 3000; g++) {
            const vt_tc_arch *A = all[m];
            uint16_t a[64], b[64], pa[64], pb[64];
            int mode = g % 3 + 1;
            for (int i = 0; i < A->group; i++) a[i] = gen_in(A->type, &s, mode), b[i] = gen_in(A->type, &s, 1);
            uint32_t c = gen_c(&s, 1), r = vt_tc_group(A, c, a, b, A->group);
            memcpy(pa, a, sizeof a), memcpy(pb, b, sizeof b);
            for (int i = A->group - 1; i > 0; i--) { /* Fisher-Yates */
                int j = (int)(sm64(&s) % (uint64_t)(i + 1));
                uint16_t x = pa[i]; pa[i] = pa[j], pa[j] = x;
                x = pb[i]; pb[i] = pb[j], pb[j] = x;
            }
            if (vt_tc_group(A, c, pa, pb, A->group) != r) bad++;
        }
    CHECK(bad == 0, "%ld permuted groups changed their result", bad);

    /* against the exact sum (FP16 inputs in a narrow band: every sum exact in FP64): with every term
     * positive the result is never above the exact sum (truncation), and it differs from RN32 */
    long below = 0, differs = 0, n = 0;
    bad = 0;
    for (int g = 0; g < 20000; g++) {
        uint16_t a[16], b[16];
        double exact = 0;
        for (int i = 0; i < 16; i++) {
            a[i] = gen_in(VT_TC_FP16, &s, 1) & 0x7FFF, b[i] = gen_in(VT_TC_FP16, &s, 1) & 0x7FFF;
            exact += ref_decode(VT_TC_FP16, a[i]) * ref_decode(VT_TC_FP16, b[i]);
        }
        uint32_t c = gen_c(&s, 1) & 0x7FFFFFFF;
        exact += (double)f32(c); /* terms in [2^-28, 2^8]: 36 bits of span, exact in FP64 */
        float r = f32(vt_tc_group(&vt_tc_sm90_fp16, c, a, b, 16));
        n++;
        if ((double)r > exact) bad++;
        if ((double)r < exact) below++;
        if (bits32(r) != bits32((float)exact)) differs++;
    }
    CHECK(bad == 0, "%ld positive groups above their exact sum", bad);
    CHECK(differs > 0, "no group differs from RN32(exact)");
    printf("sm90-fp16, 20000 positive groups: %ld below the exact sum, %ld differ from RN32(exact)\n", below, differs);

    /* the GEMM is the fold of groups by hand, in increasing k from +0; it equals the reference's
     * fold; the order of the fold is part of the definition (reversed, some results change) */
    for (int m = 0; m < N_MODELS; m++) {
        const vt_tc_arch *A = all[m];
        size_t M = 5, N = 7, K = 3 * (size_t)A->group + 5; /* a last partial group */
        float *X = malloc(M * K * 4), *Y = malloc(K * N * 4), *Z = malloc(M * N * 4);
        if (!X || !Y || !Z) {
            CHECK(0, "memory");
            free(X), free(Y), free(Z);
            return;
        }
        for (size_t i = 0; i < M * K; i++) X[i] = (float)(vt_rng_normal(&(vt_rng){sm64(&s)}) * (i % 5 == 0 ? 1e3 : 1));
        for (size_t i = 0; i < K * N; i++) Y[i] = (float)vt_rng_normal(&(vt_rng){sm64(&s)});
        CHECK_OK(vt_tc_gemm(A, M, N, K, X, Y, Z));
        long gbad = 0, rbad = 0, reversed_differs = 0;
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) {
                uint16_t a[64], b[64];
                uint32_t acc = 0, racc = 0, rev = 0;
                for (size_t k0 = 0; k0 < K; k0 += (size_t)A->group) {
                    int len = (int)(K - k0 < (size_t)A->group ? K - k0 : (size_t)A->group);
                    for (int t = 0; t < len; t++) {
                        a[t] = vt_tc_from_f32(A->type, bits32(X[i * K + k0 + (size_t)t]));
                        b[t] = vt_tc_from_f32(A->type, bits32(Y[(k0 + (size_t)t) * N + j]));
                    }
                    acc = vt_tc_group(A, acc, a, b, len);
                    racc = ref_group(A, racc, a, b, len);
                }
                for (size_t k0 = (K - 1) / (size_t)A->group * (size_t)A->group;; k0 -= (size_t)A->group) {
                    int len = (int)(K - k0 < (size_t)A->group ? K - k0 : (size_t)A->group);
                    for (int t = 0; t < len; t++) {
                        a[t] = vt_tc_from_f32(A->type, bits32(X[i * K + k0 + (size_t)t]));
                        b[t] = vt_tc_from_f32(A->type, bits32(Y[(k0 + (size_t)t) * N + j]));
                    }
                    rev = vt_tc_group(A, rev, a, b, len);
                    if (k0 == 0) break;
                }
                if (bits32(Z[i * N + j]) != acc) gbad++;
                if (racc != acc) rbad++;
                if (rev != acc) reversed_differs++;
            }
        CHECK(gbad == 0 && rbad == 0, "%s GEMM: %ld elements differ from the fold, %ld from the reference fold", A->name,
              gbad, rbad);
        CHECK(reversed_differs > 0, "%s GEMM: the reversed fold changes nothing", A->name);
        printf("%s GEMM %zux%zux%zu = the fold by hand; the reversed fold changes %ld of %zu elements\n", A->name, M, N, K,
               reversed_differs, M * N);
        /* K = 0: +0 */
        CHECK_OK(vt_tc_gemm(A, M, N, 0, X, Y, Z));
        CHECK(bits32(Z[0]) == 0 && bits32(Z[M * N - 1]) == 0, "K = 0 is not +0");
        free(X), free(Y), free(Z);
    }
    CHECK(vt_tc_arch_by_name("sm90-bf16") == &vt_tc_sm90_bf16 && !vt_tc_arch_by_name("sm70"), "arch names");
    for (int m = 0; m < N_MODELS; m++) CHECK(vt_tc_arch_by_name(all[m]->name) == all[m], "arch name %s", all[m]->name);
    vt_tc_arch v16 = vt_tc_sm90_fp16;
    v16.via_fp16 = 1;
    CHECK(vt_tc_arch_check(&v16) == VT_ERR_ARG, "via_fp16 accepted for FP16 inputs");
    v16 = vt_tc_sm90_bf16;
    v16.zero_exp = (vt_tc_zero_exp)2;
    CHECK(vt_tc_arch_check(&v16) == VT_ERR_ARG, "zero_exp 2 accepted");
    v16 = vt_tc_sm90_bf16;
    v16.zero_sign = (vt_tc_zero_sign)2;
    CHECK(vt_tc_arch_check(&v16) == VT_ERR_ARG, "zero_sign 2 accepted");
    vt_tc_arch bad_arch = vt_tc_sm90_bf16;
    bad_arch.width = 64;
    CHECK(vt_tc_arch_check(&bad_arch) == VT_ERR_ARG, "width 64 accepted");
    CHECK(vt_tc_gemm(&bad_arch, 1, 1, 1, (float[]){1}, (float[]){1}, (float[]){0}) == VT_ERR_ARG, "gemm bad arch");
}

/* ------------------------------------------------------------------ (5) the GEMM's decoded path */

/* vt_tc_gemm decodes its operands once and runs the groups of finite rows and columns in exact FP64
 * arithmetic (kernels/vt_tc.c "the GEMM"), eight columns at a time in the vector implementations, its
 * rows over the threads; every element of every implementation this CPU runs, with the operands
 * stored plain and transposed, must equal the fold of vt_tc_group on the converted bits: operands
 * drawn from every class (random FP32 bit patterns with NaN and inf, subnormals, huge values, zeros
 * of both signs, a band around 1), every model and the parameter variants, partial groups (K not a
 * multiple of the group) and partial blocks of columns (N = 11 and 21). */
static uint32_t gen_f32(uint64_t *s, int mode)
{
    uint64_t u = sm64(s);
    switch (mode) {
    case 0: return (uint32_t)(u >> 16);                                 /* any pattern */
    case 1: return (uint32_t)(u & 1) << 31 | (uint32_t)(100 + (u >> 40) % 40) << 23 | ((uint32_t)(u >> 8) & 0x7FFFFF);
    case 2: return (uint32_t)(u & 1) << 31 | (uint32_t)((u >> 40) % 4) << 23 | ((uint32_t)(u >> 8) & 0x7FFFFF);
    case 3: return (uint32_t)(u & 1) << 31 | (uint32_t)(230 + (u >> 40) % 25) << 23 | ((uint32_t)(u >> 8) & 0x7FFFFF);
    /* +-2^-75 or +-2^-76 (BF16 values; FP16 and E4M3 take them to +-0): their products, 2^-150 .. 2^-152,
     * sum to FP32 underflows, negative ones truncated to -0, the accumulator -0 for the next group */
    case 5: return (uint32_t)(u & 1) << 31 | (uint32_t)(52 - (u >> 40) % 2) << 23;
    /* a narrow band around 1: sums with carries out of the window */
    case 6: return (uint32_t)(u & 1) << 31 | (uint32_t)(126 + (u >> 40) % 2) << 23 | ((uint32_t)(u >> 8) & 0x7FFFFF);
    default: return (uint32_t)(u & 1) << 31;                            /* +-0 */
    }
}

/* the fold of vt_tc_group for C[i][j] of X [M][K] Y [K][N] */
static uint32_t fold_elem(const vt_tc_arch *A, const float *X, const float *Y, size_t N, size_t K, size_t i, size_t j)
{
    uint16_t a[64], b[64];
    uint32_t acc = 0;
    for (size_t k0 = 0; k0 < K; k0 += (size_t)A->group) {
        int len = (int)(K - k0 < (size_t)A->group ? K - k0 : (size_t)A->group);
        for (int t = 0; t < len; t++) {
            a[t] = vt_tc_from_f32(A->type, bits32(X[i * K + k0 + (size_t)t]));
            b[t] = vt_tc_from_f32(A->type, bits32(Y[(k0 + (size_t)t) * N + j]));
        }
        acc = vt_tc_group(A, acc, a, b, len);
    }
    return acc;
}

static void test_gemm_paths(void)
{
    const vt_tc_arch *const *base = MODELS;
    uint64_t s = vt_test_seed(28) ^ 0x5151;
    long checked = 0, negzero = 0, before = vt_test_failed;
    int nimpl = 0;
    for (int impl = 0; impl < 8; impl++) nimpl += vt_tc_impl_name(impl) != NULL;
    CHECK(vt_tc_impl_name(0) && strcmp(vt_tc_impl_name(0), "scalar") == 0, "the scalar implementation is always there");
    for (size_t m = 0; m < N_MODELS; m++)
        for (int variant = 0; variant < 7; variant++)
            for (int mix = 0; mix < 7; mix++) {
                vt_tc_arch A = *base[m];
                if (variant == 1) A.align = VT_TC_ALIGN_FLOOR;
                if (variant == 2) A.out = VT_TC_OUT_RNE;
                if (variant == 3) A.prod_eoff = 1;
                if (variant == 4) A.e_floor = -300, A.inf_on_overflow = 0;
                if (variant == 5) { /* the zeros' variants: the GEMM folds vt_tc_group (one mix in two: slow) */
                    if (mix % 2 || mix == 6) continue;
                    A.zero_exp = VT_TC_ZERO_EXP_FIELDS, A.zero_sign = VT_TC_ZERO_POS;
                }
                if (variant == 6) { /* E4M3 in a narrow window: the subnormals' exponents decide bits */
                    if (A.type != VT_TC_E4M3) continue;
                    A.width = 12;
                }
                /* mix 0: a band around 1; 1: tiny and zeros; 2: huge (overflow); 3: everything, NaN and inf in
                 * some rows and columns; 4: underflows to -0 followed by zeros of both signs; 5: cancellation
                 * (pairs of products that cancel exactly) in a narrow band (carries); 6: a long K (the
                 * accumulators kept between chunks of k) over all finite classes */
                size_t M = 9 + (size_t)mix, N = mix % 2 ? 21 : 11, K = 2 * (size_t)A.group + 3 + (size_t)mix;
                if (mix == 6) M = 5, N = m % 2 ? 21 : 11, K = 2100 + 2 * (size_t)A.group + 3; /* N = 21: a block of columns over the rows */
                float *X = malloc(M * K * 4), *Y = malloc(K * N * 4), *Z = malloc(M * N * 4);
                float *XT = malloc(M * K * 4), *YT = malloc(K * N * 4);
                if (!X || !Y || !Z || !XT || !YT) {
                    CHECK(0, "memory");
                    free(X), free(Y), free(Z), free(XT), free(YT);
                    return;
                }
                for (size_t i = 0; i < M * K + K * N; i++) {
                    int md = mix == 0 ? 1 : mix == 1 ? (sm64(&s) % 3 ? 2 : 4) : mix == 2 ? (sm64(&s) % 2 ? 3 : 1)
                           : mix == 3 ? (int)(sm64(&s) % 5) : mix == 4 ? (sm64(&s) % 3 ? 5 : 4) : mix == 5 ? 6
                           : (int[]){1, 1, 1, 2, 4, 5, 6, 6}[sm64(&s) % 8];
                    if (mix == 3 && md == 0 && sm64(&s) % 4) md = 1; /* specials in some rows and columns only */
                    /* mix 4: whole groups of zeros after the first (the -0 accumulator meets only zeros) */
                    if (mix == 4 && i < M * K && (i % K) >= (size_t)A.group && sm64(&s) % 4) md = 4;
                    float v = f32(gen_f32(&s, md));
                    if (i < M * K) X[i] = v;
                    else Y[i - M * K] = v;
                }
                if (mix == 5) /* X[i][k+1] = -X[i][k], Y[k+1][j] = Y[k][j] for even k, except a few */
                    for (size_t k = 0; k + 1 < K; k += 2) {
                        for (size_t i = 0; i < M; i++)
                            if (sm64(&s) % 8) X[i * K + k + 1] = -X[i * K + k];
                        for (size_t j = 0; j < N; j++)
                            if (sm64(&s) % 8) Y[(k + 1) * N + j] = Y[k * N + j];
                    }
                for (size_t i = 0; i < M; i++)
                    for (size_t k = 0; k < K; k++) XT[k * M + i] = X[i * K + k];
                for (size_t k = 0; k < K; k++)
                    for (size_t j = 0; j < N; j++) YT[j * K + k] = Y[k * N + j];
                uint32_t *want = malloc(M * N * 4);
                if (!want) {
                    CHECK(0, "memory");
                    free(X), free(Y), free(Z), free(XT), free(YT);
                    return;
                }
                for (size_t i = 0; i < M; i++)
                    for (size_t j = 0; j < N; j++) {
                        want[i * N + j] = fold_elem(&A, X, Y, N, K, i, j);
                        negzero += want[i * N + j] == 0x80000000u;
                    }
                for (int impl = -1; impl < nimpl; impl++)
                    for (int tr = 0; tr < 4; tr++) {
                        int ta = tr & 1, tb = tr >> 1;
                        if (impl < 0 && tr) continue; /* the default implementation through vt_tc_gemm */
                        if (impl < 0) CHECK_OK(vt_tc_gemm(&A, M, N, K, X, Y, Z));
                        else CHECK_OK(vt_tc_gemm_ex(&A, impl, ta, tb, M, N, K, ta ? XT : X, tb ? YT : Y, Z));
                        for (size_t t = 0; t < M * N; t++) {
                            checked++;
                            if (bits32(Z[t]) != want[t]) {
                                CHECK(0, "%s variant %d mix %d impl %s ta %d tb %d: C[%zu][%zu] = 0x%08X, the fold 0x%08X",
                                      A.name, variant, mix, impl < 0 ? vt_tc_impl() : vt_tc_impl_name(impl), ta, tb,
                                      t / N, t % N, bits32(Z[t]), want[t]);
                                break;
                            }
                        }
                    }
                free(want), free(X), free(Y), free(Z), free(XT), free(YT);
            }
    /* via_fp16 decides the exponent of an E4M3 subnormal (FP16's normal exponent, not E4M3's emin): in
     * a window of 12 bits, group 1: 1 * 1 + 2^-9 * 0.5 = 1 + 2^-10 (E = 0, bottom 2^-11: kept); group 2:
     * 2^-7 (0x04, a subnormal) * 2^8 = 2. Through FP16 its alignment is -7 + 8 = 1 = E, bottom 2^-10:
     * 1025 + 2048 units = 3 + 2^-10 = 0x40401000. As E4M3 (emin -6): E = 2, bottom 2^-9: c cut to 1,
     * 3.0 = 0x40400000. Every implementation (the decoded path) and the fold. */
    {
        vt_tc_arch w12 = vt_tc_sm90_e4m3f16;
        w12.width = 12;
        float X[17] = {1, 0x1p-9f}, Y[17] = {1, 0.5f}, Z = 0;
        X[16] = 0x1p-7f, Y[16] = 256;
        for (int via = 1; via >= 0; via--) {
            w12.via_fp16 = via;
            uint32_t want = via ? 0x40401000u : 0x40400000u;
            CHECK(fold_elem(&w12, X, Y, 1, 17, 0, 0) == want, "via_fp16 %d: the fold 0x%08X", via,
                  fold_elem(&w12, X, Y, 1, 17, 0, 0));
            for (int impl = 0; impl < nimpl; impl++) {
                CHECK_OK(vt_tc_gemm_ex(&w12, impl, 0, 0, 1, 1, 17, X, Y, &Z));
                CHECK(bits32(Z) == want, "via_fp16 %d, %s: 0x%08X, want 0x%08X", via, vt_tc_impl_name(impl), bits32(Z),
                      want);
            }
        }
    }
    CHECK(vt_test_failed == before, "vt_tc_gemm differs from the fold of vt_tc_group");
    CHECK(negzero > 0, "no -0 result: the -0 accumulator is not exercised");
    CHECK(vt_tc_gemm_ex(&vt_tc_sm90_bf16, 99, 0, 0, 1, 1, 1, (float[]){1}, (float[]){1}, (float[]){0}) == VT_ERR_ARG,
          "an unknown implementation accepted");
    printf("vt_tc_gemm: %ld elements (%ld of them -0) over %d models x 7 variants x 7 operand mixes x %d implementations "
           "(default %s) x 4 transposes = the fold of vt_tc_group\n", checked, negzero, N_MODELS, nimpl, vt_tc_impl());
}

int main(void)
{
    tables();
    test_conversions();
    test_reference();
    test_probes();
    test_questions();
    test_properties();
    test_digests();
    test_gemm_paths();
    return vt_test_finish("test_tc");
}
