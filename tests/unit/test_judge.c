/* test_judge - the dispute engine's judgement of one operation (vt_game_judge_op, the stage the
 * game ends in after its bisections) on the counterexamples of the exact-rounding issue, with
 * different arbiter and auditor orders, in both rounding modes.
 *
 * The disputed operation is the first layer's weight-gradient GEMM of a one-layer MLP (64 -> 10,
 * batch K): its 640 elements are sums over the K examples of the batch, and the test writes the
 * counterexample data into its agreed inputs (the activations X, K x 64, and the logits gradient
 * dZ, K x 10):
 *   - cancellation, K = 16384: the second half of the batch cancels the first to about 2^-20;
 *   - rows near a boundary, K = 4099 (the omitted direction entry whose verdict once depended on
 *     the checker's order);
 *   - stagnation, K = 16384: 1, a small term, and terms just under half an FP64 ulp of 1;
 *   - identical products, K = 16384.
 * For every arbiter order, with the claims of auditors of several orders:
 *   - an honest trainer against a lying auditor: the auditor loses;
 *   - log rounding: a value entry 3 ulps beyond the window of the exact value, an omitted entry
 *     where the window holds a boundary, or a padded entry where it holds none (manifest format 5;
 *     formats 1-4 accepted it): the trainer loses (implausible / missing entry); and a trainer of
 *     another order writes the same log (one state, one log);
 *   - exact rounding: an output one ulp off RN32(exact): the trainer loses (wrong output).
 * The verdict, its reason and the element must be the same in every arbiter order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../game/vt_game.h"
#include "../../common/vt_bytes.h"
#include "../../model/vt_model.h"
#include "../../rounding/vt_exact.h"
#include "../../rounding/vt_round.h"
#include "vt_test.h"

static vt_rng R;
static int g_asan;

enum { CX_CANCEL, CX_ROW, CX_STAGNATION, CX_IDENTICAL, CX_COUNT };
static const char *const cx_name[CX_COUNT] = {"cancellation", "near a boundary", "stagnation", "identical products"};

typedef struct {
    vt_model m;
    uint32_t j; /* the weight-gradient operation */
} party;

static void party_init(party *p, vt_rounding mode, size_t K, vt_order order)
{
    vt_recipe rc;
    vt_recipe_default(&rc);
    snprintf(rc.dataset, sizeof rc.dataset, "digits");
    CHECK_OK(vt_recipe_set(&rc, "layers=[64,10]"));
    rc.batch = (uint32_t)K;
    rc.bound.rounding = mode;
    CHECK_OK(vt_recipe_validate(&rc));
    CHECK_OK(vt_model_init(&p->m, &rc, K, order)); /* a dataset of K examples: never loaded, the inputs are set */
    p->j = UINT32_MAX;
    uint32_t gw = vt_program_find(&p->m.prog, "fc1.weight.grad");
    for (uint32_t j = 1; j <= p->m.n_ops; j++)
        if (vt_op_writes(&p->m.prog.op[j], gw)) p->j = j;
    CHECK(p->j != UINT32_MAX, "the model has a layer-1 weight-gradient operation");
}

static void gen(int cx, size_t K, float *X, float *dZ)
{
    for (size_t i = 0; i < K * 64; i++) X[i] = (float)vt_rng_normal(&R);
    for (size_t i = 0; i < K * 10; i++) dZ[i] = (float)vt_rng_normal(&R);
    size_t h = K / 2;
    switch (cx) {
    case CX_CANCEL:
    case CX_ROW:
        if (cx == CX_ROW && vt_rng_uniform(&R) < 0.5) break; /* half of the row instances plain */
        for (size_t b = 0; b < h; b++)
            for (size_t i = 0; i < 64; i++) X[(b + h) * 64 + i] = -X[b * 64 + i];
        for (size_t b = 0; b < h; b++)
            for (size_t j = 0; j < 10; j++)
                dZ[(b + h) * 10 + j] = dZ[b * 10 + j] * (1.0f + (float)ldexp(vt_rng_uniform(&R) - 0.5, -20));
        break;
    case CX_STAGNATION:
        for (size_t b = 0; b < K; b++) {
            for (size_t i = 0; i < 8; i++) X[b * 64 + i] = b == 0 ? 1.0f : b == 1 ? 0x1p-30f : 0x1.fffffep-54f;
            for (size_t j = 0; j < 10; j++) dZ[b * 10 + j] = 1.0f;
        }
        break;
    case CX_IDENTICAL:
        for (size_t i = 0; i < 64; i++) {
            float v = (float)(0.5 + vt_rng_uniform(&R));
            for (size_t b = 0; b < K; b++) X[b * 64 + i] = v;
        }
        for (size_t b = 0; b < K; b++)
            for (size_t j = 0; j < 10; j++) dZ[b * 10 + j] = 0.3f;
        break;
    }
}

static void set_inputs(party *p, size_t K, const float *X, const float *dZ)
{
    memcpy(vt_model_tensor(&p->m, vt_program_find(&p->m.prog, "input"), NULL), X, K * 64 * sizeof(float));
    memcpy(vt_model_tensor(&p->m, vt_program_find(&p->m.prog, "fc1.out.grad"), NULL), dZ, K * 10 * sizeof(float));
}

static float *output(party *p) { return vt_model_tensor(&p->m, vt_program_find(&p->m.prog, "fc1.weight.grad"), NULL); }

/* Runs the operation as a trainer (record, log into *log) or an auditor (lenient replay of
 * *log); returns the output hash and copies the output (640 values) to out. */
static void run_op(party *p, int record, vt_steplog *log, float *out, uint8_t h[32])
{
    vt_rctx rc;
    vt_rctx_init(&rc, record ? VT_RMODE_RECORD : VT_RMODE_REPLAY, p->m.rcp.bound);
    rc.lenient = !record;
    CHECK_OK(vt_rctx_begin_step(&rc, 1, log));
    p->m.step = 0;
    CHECK_OK(vt_model_exec_op(&p->m, NULL, &rc, 1, p->j));
    memcpy(out, output(p), 640 * sizeof(float));
    CHECK_OK(vt_model_output_hash(&p->m, p->j, h));
}

static void hash_of(party *p, const float *vals, uint8_t h[32])
{
    memcpy(output(p), vals, 640 * sizeof(float));
    CHECK_OK(vt_model_output_hash(&p->m, p->j, h));
}

static uint32_t shift_ulps(uint32_t bits, int64_t d)
{
    uint32_t k = vt_f32_key(bits);
    uint32_t nk = (uint32_t)((int64_t)k + d);
    return (nk & 0x80000000u) ? (nk & 0x7fffffffu) : ~nk; /* inverse of vt_f32_key */
}

static long g_games, g_trainer_lost, g_auditor_lost, g_omissions, g_forged, g_padded;
static int g_legacy; /* judge_all: the arbiter judges a run of manifest formats 1-4 (vt_bound_cfg.legacy_log) */

/* Plays the judgement in every arbiter order; all must give `want_loser` (and, when want_reason
 * >= 0, that reason). */
static void judge_all(const char *what, vt_rounding mode, size_t K, const float *X, const float *dZ,
                      const vt_steplog *log, const uint8_t ht[32], const uint8_t ha[32], int want_loser, int want_reason)
{
    for (int o = 0; o < VT_ORDER_COUNT; o++) {
        if (g_asan && o == VT_ORDER_SORTED && K > 4099) continue;
        party a;
        party_init(&a, mode, K, (vt_order)o);
        a.m.rcp.bound.legacy_log = g_legacy;
        set_inputs(&a, K, X, dZ);
        vt_steplog copy;
        vt_steplog_init(&copy, 1);
        for (uint32_t r = 0; r < log->n_ops; r++) {
            vt_oplog *dst;
            CHECK_OK(vt_steplog_add_op(&copy, log->ops[r].op_id, log->ops[r].n_elems, &dst));
            for (uint64_t k = 0; k < log->ops[r].n_entries; k++) CHECK_OK(vt_oplog_push(dst, log->ops[r].e[k]));
        }
        vt_judgement jd;
        vt_game_judge_op(&a.m, NULL, 1, a.j, &copy, ht, ha, &jd);
        CHECK(jd.loser == want_loser && (want_reason < 0 || jd.reason == want_reason),
              "%s (%s rounding, K=%zu): arbiter order %s: loser %d reason %s (%s); expected loser %d", what,
              mode == VT_ROUNDING_EXACT ? "exact" : "log", K, vt_order_name((vt_order)o), jd.loser,
              vt_reason_name(jd.reason), jd.why, want_loser);
        g_games++;
        g_trainer_lost += jd.loser == VT_LOSER_TRAINER;
        g_auditor_lost += jd.loser == VT_LOSER_AUDITOR;
        vt_steplog_free(&copy);
        vt_model_free(&a.m);
    }
}

static void play_case(int cx, vt_rounding mode, size_t K, vt_order trainer_order)
{
    float *X = malloc(K * 64 * sizeof(float)), *dZ = malloc(K * 10 * sizeof(float));
    gen(cx, K, X, dZ);
    char what[96];
    /* the honest trainer */
    party t;
    party_init(&t, mode, K, trainer_order);
    set_inputs(&t, K, X, dZ);
    vt_steplog log;
    vt_steplog_init(&log, 1);
    float tout[640], aout[640], lie[640];
    uint8_t ht[32], ha[32], hl[32];
    run_op(&t, 1, &log, tout, ht);
    if (mode == VT_ROUNDING_EXACT) CHECK(log.n_ops == 0, "exact rounding writes no log");
    /* honest auditors of other orders agree with the trainer */
    static const vt_order auditors[] = {VT_ORDER_SPLIT, VT_ORDER_PAIRWISE, VT_ORDER_REVERSE};
    for (size_t a = 0; a < sizeof auditors / sizeof auditors[0]; a++) {
        party p;
        party_init(&p, mode, K, auditors[a]);
        set_inputs(&p, K, X, dZ);
        run_op(&p, 0, &log, aout, ha);
        CHECK(memcmp(ha, ht, 32) == 0, "%s: an honest auditor (%s) disagrees with the honest trainer", cx_name[cx],
              vt_order_name(auditors[a]));
        vt_model_free(&p.m);
    }
    /* a lying auditor: one element moved by one ulp */
    memcpy(lie, tout, sizeof lie);
    size_t victim = (size_t)(vt_rng_uniform(&R) * 640);
    lie[victim] = vt_bits_f32(shift_ulps(vt_f32_bits(lie[victim]), 1));
    hash_of(&t, lie, hl);
    snprintf(what, sizeof what, "%s: honest trainer, lying auditor", cx_name[cx]);
    judge_all(what, mode, K, X, dZ, &log, ht, hl, VT_LOSER_AUDITOR, VT_REASON_WRONG_OUTPUT);

    /* the exact values' windows, from the operands (independently of the rounding layer) */
    uint32_t lo[640], hi[640], ex[640];
    for (size_t i = 0; i < 64; i++)
        for (size_t j = 0; j < 10; j++) {
            vt_xacc acc;
            vt_xacc_init(&acc);
            for (size_t b = 0; b < K; b++) vt_xacc_add_prod32(&acc, X[b * 64 + i], dZ[b * 10 + j]);
            double B = vt_bound_of_terms(&t.m.rcp.bound, K, X + i, 64, dZ + j, 10);
            vt_xacc w = acc;
            vt_xacc_add(&w, -B);
            lo[i * 10 + j] = vt_f32_bits(vt_xacc_round32(&w));
            w = acc;
            vt_xacc_add(&w, B);
            hi[i * 10 + j] = vt_f32_bits(vt_xacc_round32(&w));
            ex[i * 10 + j] = vt_f32_bits(vt_xacc_round32(&acc));
        }
    for (size_t e = 0; e < 640; e++)
        CHECK(vt_f32_bits(tout[e]) == ex[e], "%s (%s): the trainer's element %zu is not RN32 of the exact value",
              cx_name[cx], mode == VT_ROUNDING_EXACT ? "exact" : "log", e);
    /* the honest auditor's claim against a forging trainer: its lenient replay */
    if (mode == VT_ROUNDING_EXACT) {
        float forged[640];
        memcpy(forged, tout, sizeof forged);
        forged[victim] = vt_bits_f32(shift_ulps(ex[victim], vt_rng_uniform(&R) < 0.5 ? 1 : -1));
        uint8_t hf[32];
        hash_of(&t, forged, hf);
        snprintf(what, sizeof what, "%s: a trainer one ulp off RN32(exact)", cx_name[cx]);
        judge_all(what, mode, K, X, dZ, &log, hf, ht, VT_LOSER_TRAINER, VT_REASON_WRONG_OUTPUT);
        g_forged++;
    } else {
        /* a value entry 3 ulps beyond the window, at the victim */
        vt_steplog f;
        vt_steplog_init(&f, 1);
        vt_oplog *o;
        CHECK_OK(vt_steplog_add_op(&f, t.j, 640, &o));
        const vt_oplog *h = log.n_ops ? &log.ops[0] : NULL;
        float forged[640];
        memcpy(forged, tout, sizeof forged);
        vt_log_entry fe = {victim, shift_ulps(hi[victim], 3), 1, 0};
        forged[victim] = vt_bits_f32(fe.value_bits);
        int put = 0;
        for (uint64_t k = 0; h && k < h->n_entries; k++) {
            if (!put && h->e[k].index >= victim) {
                CHECK_OK(vt_oplog_push(o, fe));
                put = 1;
            }
            if (h->e[k].index != victim) CHECK_OK(vt_oplog_push(o, h->e[k]));
        }
        if (!put) CHECK_OK(vt_oplog_push(o, fe));
        uint8_t hf[32];
        hash_of(&t, forged, hf);
        party p;
        party_init(&p, mode, K, VT_ORDER_SPLIT);
        set_inputs(&p, K, X, dZ);
        run_op(&p, 0, &f, aout, ha); /* the honest auditor: RN32(exact) where the entry is implausible */
        vt_model_free(&p.m);
        snprintf(what, sizeof what, "%s: a value entry 3 ulps beyond the window", cx_name[cx]);
        judge_all(what, mode, K, X, dZ, &f, hf, ha, VT_LOSER_TRAINER, VT_REASON_IMPLAUSIBLE);
        g_forged++;
        vt_steplog_free(&f);
        /* an omitted entry where the window holds a boundary (lo != hi) */
        for (uint64_t k = 0; h && k < h->n_entries; k++) {
            uint64_t idx = h->e[k].index;
            if (lo[idx] == hi[idx]) continue;
            vt_steplog g;
            vt_steplog_init(&g, 1);
            CHECK_OK(vt_steplog_add_op(&g, t.j, 640, &o));
            for (uint64_t q = 0; q < h->n_entries; q++)
                if (q != k) CHECK_OK(vt_oplog_push(o, h->e[q]));
            party p2;
            party_init(&p2, mode, K, VT_ORDER_PAIRWISE);
            set_inputs(&p2, K, X, dZ);
            run_op(&p2, 0, &g, aout, ha);
            vt_model_free(&p2.m);
            snprintf(what, sizeof what, "%s: an omitted entry (element %llu)", cx_name[cx], (unsigned long long)idx);
            judge_all(what, mode, K, X, dZ, &g, ht, ha, VT_LOSER_TRAINER, VT_REASON_MISSING_ENTRY);
            g_omissions++;
            vt_steplog_free(&g);
            break;
        }
        /* one state, one log (manifest format 5): a trainer of another order writes the same log */
        {
            party t2;
            party_init(&t2, mode, K, trainer_order == VT_ORDER_PAIRWISE ? VT_ORDER_REVERSE : VT_ORDER_PAIRWISE);
            set_inputs(&t2, K, X, dZ);
            vt_steplog l2;
            vt_steplog_init(&l2, 1);
            uint8_t h2[32], lh[32], lh2[32];
            run_op(&t2, 1, &l2, aout, h2);
            CHECK_OK(vt_steplog_hash(&log, lh));
            CHECK_OK(vt_steplog_hash(&l2, lh2));
            CHECK(memcmp(h2, ht, 32) == 0 && memcmp(lh, lh2, 32) == 0,
                  "%s: trainers of two orders write different logs over the same values", cx_name[cx]);
            vt_steplog_free(&l2);
            vt_model_free(&t2.m);
        }
        /* a padded entry: a direction entry on the first element without one, whose window holds
         * no boundary (the honest log has an entry wherever one does). Format 5: the trainer loses
         * (implausible: unneeded) in every arbiter order; formats 1-4 accepted it (moot) */
        size_t pad = 0;
        for (uint64_t k = 0; h && k < h->n_entries && h->e[k].index == pad; k++) pad++;
        if (pad < 640) { /* (not when every element's window holds a boundary: cancellation) */
            CHECK(lo[pad] == hi[pad], "%s: element %zu without an entry has a boundary in its window", cx_name[cx], pad);
            vt_steplog g;
            vt_steplog_init(&g, 1);
            CHECK_OK(vt_steplog_add_op(&g, t.j, 640, &o));
            vt_log_entry pe = {pad, 0, 0, vt_rng_uniform(&R) < 0.5};
            int put = 0;
            for (uint64_t k = 0; h && k < h->n_entries; k++) {
                if (!put && h->e[k].index > pad) {
                    CHECK_OK(vt_oplog_push(o, pe));
                    put = 1;
                }
                CHECK_OK(vt_oplog_push(o, h->e[k]));
            }
            if (!put) CHECK_OK(vt_oplog_push(o, pe));
            party p3;
            party_init(&p3, mode, K, VT_ORDER_SPLIT);
            set_inputs(&p3, K, X, dZ);
            run_op(&p3, 0, &g, aout, ha); /* the honest auditor notes the fault; its values are RN32(exact) */
            vt_model_free(&p3.m);
            snprintf(what, sizeof what, "%s: a padded entry (element %zu)", cx_name[cx], pad);
            judge_all(what, mode, K, X, dZ, &g, ht, ha, VT_LOSER_TRAINER, VT_REASON_IMPLAUSIBLE);
            g_legacy = 1;
            snprintf(what, sizeof what, "%s: a padded entry under formats 1-4", cx_name[cx]);
            judge_all(what, mode, K, X, dZ, &g, ht, ha, VT_LOSER_AUDITOR, VT_REASON_WRONG_OUTPUT);
            g_legacy = 0;
            g_padded++;
            vt_steplog_free(&g);
        }
    }
    vt_steplog_free(&log);
    vt_model_free(&t.m);
    free(X);
    free(dZ);
}

int main(void)
{
    const char *asan = getenv("VT_ASAN");
    g_asan = asan && *asan && strcmp(asan, "0") != 0;
    R.s = vt_test_seed(0x1d9e);
    static const size_t Ks[CX_COUNT] = {16384, 4099, 16384, 16384};
    for (int mode = 0; mode < 2; mode++)
        for (int cx = 0; cx < CX_COUNT; cx++) {
            /* rows near a boundary: instances until two omissions were played (log rounding), at most 16 */
            long om0 = g_omissions;
            for (int r = 0; r < (cx == CX_ROW ? 16 : 1); r++) {
                play_case(cx, mode ? VT_ROUNDING_EXACT : VT_ROUNDING_LOG, Ks[cx], r % 2 ? VT_ORDER_FORWARD : VT_ORDER_BLAS);
                if (cx == CX_ROW && (mode || g_omissions - om0 >= 2) && r >= 1) break;
            }
        }
    printf("judgements: %ld in all arbiter orders (%ld against the trainer, %ld against the auditor), every one "
           "as expected; %ld forged outputs or entries, %ld omitted entries, %ld padded logs\n",
           g_games, g_trainer_lost, g_auditor_lost, g_forged, g_omissions, g_padded);
    CHECK(g_omissions >= 3, "the counterexamples gave omission cases (%ld)", g_omissions);
    CHECK(g_padded >= 2, "the counterexamples gave padding cases (%ld)", g_padded);
    return vt_test_finish("test_judge");
}
