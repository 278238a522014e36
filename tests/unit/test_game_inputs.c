/* test_game_inputs - the arbiter's authentication of a disputed operation's inputs (game/vt_game_state.c
 * load_inputs, vt_input_producer) and its derivation of the state of step hi when every operation
 * agrees, attacked as a dishonest trainer; and the program checks (vt_program_finish) that keep an
 * operation's computation inside its tensors.
 *
 *  1. An honest trainer never loses: in an Adam run, for segments starting at step 0 and 1 and
 *     every position, each input's authenticating hash (its producer's output hash over all of its
 *     outputs, or its tensor hash in the state at lo) is the hash of what the trainer holds when
 *     the operation runs - including inputs produced in the previous step of the segment; and at
 *     the segment's end the last writers' outputs give the state hash.
 *  2. A trainer cannot pass off the two Adam moments with fewer outputs or in another order.
 *  3. Hostile words: a U8 above 255, the wrong word count, labels >= the number of classes, a NaN
 *     step count or learning rate: refused or judged, never read outside a tensor.
 *  4. vt_program_finish refuses programs whose operations would write outside a tensor (an
 *     optimiser's update into a U8 tensor) or whose state the arbiter could not derive. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/vt_bytes.h"
#include "../../game/vt_dispute.h"
#include "../../game/vt_game.h"
#include "../../model/vt_model.h"
#include "../../ops/vt_ops.h"
#include "vt_test.h"

#define MAXP 4096

typedef struct {
    uint8_t h[MAXP][32];              /* output hash of absolute position p (1-based) */
    uint8_t (*th_lo[2])[32];          /* tensor hashes of the states at steps 0 and 1 */
    long checked, mismatched;
} honest_ctx;

static void hash_outputs(vt_model *m, uint32_t q, uint8_t out[32]) { CHECK_OK(vt_model_output_hash(m, q, out)); }

/* What the trainer holds just before absolute position pa runs, against what authenticates it. */
static void check_before(honest_ctx *c, vt_model *m, uint64_t pa)
{
    uint32_t n = m->n_ops, j = (uint32_t)((pa - 1) % n) + 1;
    const vt_opdesc *o = &m->prog.op[j];
    for (uint64_t lo = 0; lo < 2; lo++) {
        if (pa <= lo * n) continue;
        uint64_t p = pa - lo * n;
        for (uint32_t k = 0; k < o->n_in; k++) {
            uint64_t pos;
            CHECK_OK(vt_input_producer(m, p, o->in[k], &pos));
            uint8_t have[32];
            const uint8_t *want;
            if (pos) {
                uint64_t ps;
                uint32_t pj;
                vt_seg_position(lo, n, pos, &ps, &pj);
                hash_outputs(m, pj, have);
                want = c->h[pos + lo * n];
            } else {
                CHECK(o->in[k] < m->n_tensors, "a tensor from the state");
                CHECK_OK(vt_model_tensor_hash(m, o->in[k], have));
                want = c->th_lo[lo][o->in[k]];
            }
            c->checked++;
            if (memcmp(have, want, 32) != 0) {
                c->mismatched++;
                fprintf(stderr, "lo %llu position %llu (op %u, %s) input %s: an honest trainer's input is not "
                                "its agreed hash\n",
                        (unsigned long long)lo, (unsigned long long)p, j, o->name, m->prog.t[o->in[k]].name);
            }
        }
    }
}

static vt_err hook(void *ctx, vt_model *m, uint64_t s, uint32_t op)
{
    honest_ctx *c = ctx;
    uint64_t pa = (s - 1) * m->n_ops + op;
    if (pa < MAXP) CHECK_OK(vt_model_output_hash(m, op, c->h[pa]));
    if (op < m->n_ops && pa + 1 < MAXP) check_before(c, m, pa + 1);
    return VT_OK;
}

static void recipe_adam(vt_recipe *rc)
{
    vt_recipe_default(rc);
    snprintf(rc->dataset, sizeof rc->dataset, "digits");
    CHECK_OK(vt_recipe_set(rc, "layers=[64,16,10]"));
    CHECK_OK(vt_recipe_set(rc, "optimizer=adam"));
    CHECK_OK(vt_recipe_set(rc, "steps=3"));
    CHECK_OK(vt_recipe_set(rc, "batch=32"));
    CHECK_OK(vt_recipe_validate(rc));
}

static void step_model(vt_model *m, const vt_dataset *ds, honest_ctx *c)
{
    vt_steplog log;
    vt_steplog_init(&log, 0);
    vt_rctx rc;
    vt_rctx_init(&rc, VT_RMODE_RECORD, m->rcp.bound);
    CHECK_OK(vt_rctx_begin_step(&rc, m->step + 1, &log));
    CHECK_OK(vt_model_run(m, ds, &rc, m->n_ops, hook, c));
    vt_steplog_free(&log);
}

static void test_honest(const vt_dataset *ds)
{
    vt_recipe rc;
    recipe_adam(&rc);
    vt_model m;
    CHECK_OK(vt_model_init(&m, &rc, ds->n, VT_ORDER_FORWARD));
    honest_ctx *c = calloc(1, sizeof *c);
    CHECK(c != NULL, "memory");
    if (!c) return;
    for (int i = 0; i < 2; i++) c->th_lo[i] = calloc(m.n_tensors, 32);
    uint32_t moments = 0;
    for (uint32_t j = 1; j <= m.n_ops; j++)
        if (m.prog.op[j].kind == VT_OPK_ADAM_MOMENTS) moments = j;
    CHECK(moments && m.prog.op[moments].n_out == 2, "an Adam run has a two-output moments operation");
    CHECK(3 * m.n_ops < MAXP, "positions fit");
    CHECK_OK(vt_model_tensor_hashes(&m, c->th_lo[0]));
    for (uint64_t s = 1; s <= 3; s++) {
        if (s > 1) check_before(c, &m, (s - 1) * m.n_ops + 1); /* operation 1 of step s */
        step_model(&m, ds, c);
        if (s == 1) CHECK_OK(vt_model_tensor_hashes(&m, c->th_lo[1]));
    }
    CHECK(c->checked > 0 && c->mismatched == 0, "an honest trainer's inputs all authenticate (%ld of %ld do not)",
          c->mismatched, c->checked);
    /* every operation agrees: the last writers' outputs give the state of step 3 */
    for (uint64_t lo = 0; lo < 2; lo++) {
        uint64_t P = (3 - lo) * m.n_ops;
        uint8_t(*th)[32] = calloc(m.n_tensors, 32), sh[32], r[32];
        CHECK_OK(vt_model_tensor_hashes(&m, th));
        for (uint32_t t = 0; t < m.n_tensors; t++) {
            uint64_t q = 0, qs;
            uint32_t qj;
            CHECK_OK(vt_input_producer(&m, P + 1, t, &q));
            CHECK(q > 0, "state tensor %s has a writer in the segment", m.prog.t[t].name);
            if (!q) continue;
            vt_seg_position(lo, m.n_ops, q, &qs, &qj);
            CHECK(qs == 3, "its last writer ran in the last step");
            const vt_opdesc *w = &m.prog.op[qj];
            uint8_t hs[VT_MAX_OP_OUTPUTS][32], got[32];
            for (uint32_t u = 0; u < w->n_out; u++) {
                CHECK(w->out[u] < m.n_tensors, "a state tensor's multi-output writer writes only state");
                memcpy(hs[u], th[w->out[u] < m.n_tensors ? w->out[u] : 0], 32);
            }
            CHECK_OK(vt_output_hash_of(w->n_out, (const uint8_t(*)[32])hs, got));
            CHECK(memcmp(got, c->h[q + lo * m.n_ops], 32) == 0, "the state tensors combine to the agreed output");
            if (w->n_out == 2) {
                /* attack 2: the moments swapped, or one of them alone, do not pass */
                uint8_t sw[2][32], one[32];
                memcpy(sw[0], hs[1], 32), memcpy(sw[1], hs[0], 32);
                CHECK_OK(vt_output_hash_of(2, (const uint8_t(*)[32])sw, got));
                CHECK(memcmp(got, c->h[q + lo * m.n_ops], 32) != 0, "swapped moments are refused");
                CHECK_OK(vt_output_hash_of(1, (const uint8_t(*)[32])hs, one));
                CHECK(memcmp(one, c->h[q + lo * m.n_ops], 32) != 0, "one moment alone is refused");
            }
        }
        m.step = 3;
        CHECK_OK(vt_state_hash_of(3, m.n_tensors, (const uint8_t(*)[32])th, r));
        CHECK_OK(vt_model_state_hash(&m, sh));
        CHECK(memcmp(r, sh, 32) == 0, "the derived state hash of step 3 is the trainer's");
        free(th);
    }
    for (int i = 0; i < 2; i++) free(c->th_lo[i]);
    free(c);
    vt_model_free(&m);
}

/* attack 3: hostile words into the arbiter's slots, then the judgement */
static void test_words(const vt_dataset *ds)
{
    vt_recipe rc;
    recipe_adam(&rc);
    vt_model m;
    CHECK_OK(vt_model_init(&m, &rc, ds->n, VT_ORDER_FORWARD));
    const vt_program *p = &m.prog;
    uint32_t y = p->labels, probs = p->probs, lr = vt_program_find(p, "lr"), ts = vt_program_find(p, "step");
    uint32_t *w = calloc(4096, sizeof *w);
    CHECK(w != NULL && lr != UINT32_MAX && ts != UINT32_MAX, "setup");
    if (!w) return;
    size_t B = p->t[y].n;
    w[3] = 256;
    CHECK(vt_model_tensor_load(&m, y, w, B) != VT_OK, "a U8 word of 256 is refused");
    CHECK(vt_model_tensor_load(&m, y, w, B - 1) != VT_OK, "too few words are refused");
    CHECK(vt_model_tensor_load(&m, y, w, B + 1) != VT_OK, "too many words are refused");
    CHECK(vt_model_tensor_load(&m, p->n_tensors, w, 1) != VT_OK, "no such tensor");
    CHECK(vt_model_tensor_load(&m, lr, w, 1) != VT_OK, "an F64 takes two words");
    /* labels >= C (agreed - both parties' hashes over them): no read outside probs, nobody loses */
    w[3] = 200;
    CHECK_OK(vt_model_tensor_load(&m, y, w, B));
    float *P = vt_model_tensor(&m, probs, NULL);
    for (size_t i = 0; i < p->t[probs].n; i++) P[i] = 0.1f;
    uint8_t z[32] = {0}, one[32];
    memset(one, 1, 32);
    for (uint32_t j = 1; j <= m.n_ops; j++) {
        const vt_opdesc *o = &p->op[j];
        if (o->kind != VT_OPK_XENT_LOSS && o->kind != VT_OPK_XENT_BWD) continue;
        vt_judgement jd;
        vt_game_judge_op(&m, ds, 1, j, NULL, z, one, &jd);
        CHECK(jd.loser == VT_LOSER_NONE && jd.reason == VT_REASON_CANNOT_JUDGE, "%s with label 200: %d/%d %s", o->name,
              jd.loser, jd.reason, jd.why);
    }
    /* NaN step count / learning rate into Adam's update */
    uint32_t apply = 0;
    for (uint32_t j = 1; j <= m.n_ops; j++)
        if (p->op[j].kind == VT_OPK_ADAM_APPLY) apply = j;
    double nan = NAN, one_d = 1.0, lr0 = 1e-3;
    uint32_t dw[2];
    memcpy(dw, &nan, 8);
    CHECK_OK(vt_model_tensor_load(&m, ts, dw, 2));
    memcpy(dw, &lr0, 8);
    CHECK_OK(vt_model_tensor_load(&m, lr, dw, 2));
    vt_judgement jd;
    vt_game_judge_op(&m, ds, 1, apply, NULL, z, one, &jd);
    CHECK(jd.loser == VT_LOSER_NONE && jd.reason == VT_REASON_CANNOT_JUDGE, "NaN step: %d/%d %s", jd.loser, jd.reason,
          jd.why);
    memcpy(dw, &one_d, 8);
    CHECK_OK(vt_model_tensor_load(&m, ts, dw, 2));
    memcpy(dw, &nan, 8);
    CHECK_OK(vt_model_tensor_load(&m, lr, dw, 2));
    vt_game_judge_op(&m, ds, 1, apply, NULL, z, one, &jd);
    /* an agreed NaN learning rate (unreachable: the schedule's is finite) gives some verdict, no crash */
    printf("NaN learning rate: loser %d, reason %d: %s\n", jd.loser, jd.reason, jd.why);
    CHECK(jd.loser != VT_LOSER_AUDITOR || jd.reason == VT_REASON_WRONG_OUTPUT, "a verdict");
    free(w);
    vt_model_free(&m);
}

/* attack 4: programs a builder could produce */
enum { V_OK, V_SGD_U8, V_ADAM_U8, V_MIXED, V_UNWRITTEN, V_REWRITTEN, V_LOSS_U8 };

static vt_err build(int v)
{
    vt_program p;
    vt_program_init(&p);
    const uint32_t s4[] = {4}, s24[] = {2, 4}, s2[] = {2};
    uint32_t W = vt_prog_tensor(&p, VT_TC_PARAM, VT_DT_F32, 1, s4, "w");
    uint32_t F = v == V_UNWRITTEN ? vt_prog_tensor(&p, VT_TC_PARAM, VT_DT_F32, 1, s4, "frozen") : W;
    uint32_t V = vt_prog_tensor(&p, VT_TC_OPT, VT_DT_F32, 1, s4, "v");
    uint32_t V2 = vt_prog_tensor(&p, VT_TC_OPT, VT_DT_F32, 1, s4, "v2");
    uint32_t x = vt_prog_tensor(&p, VT_TC_INPUT, VT_DT_F32, 2, s24, "x");
    uint32_t y = vt_prog_tensor(&p, VT_TC_INPUT, VT_DT_U8, 1, s2, "y");
    uint32_t t = vt_prog_tensor(&p, VT_TC_INPUT, VT_DT_F64, 0, NULL, "t");
    uint32_t lr = vt_prog_tensor(&p, VT_TC_INPUT, VT_DT_F64, 0, NULL, "lr");
    uint32_t pr = vt_prog_tensor(&p, VT_TC_ACT, VT_DT_F32, 2, s24, "probs");
    uint32_t loss = vt_prog_tensor(&p, VT_TC_ACT, VT_DT_F32, 0, NULL, "loss");
    uint32_t u8 = vt_prog_tensor(&p, VT_TC_ACT, VT_DT_U8, 1, s4, "bytes");
    uint32_t act = vt_prog_tensor(&p, VT_TC_ACT, VT_DT_F32, 1, s4, "act");
    (void)F;
    vt_prog_op(&p, VT_OPK_LOAD_BATCH, NULL, 0, (const uint32_t[]){x, y}, 2, (const int64_t[]){2}, 1, NULL, 0, "load");
    vt_prog_op(&p, VT_OPK_SCHEDULE, NULL, 0, (const uint32_t[]){t, lr}, 2, (const int64_t[]){0, 0, 0, 10}, 4,
               (const double[]){0.1, 1, 1}, 3, "schedule");
    p.fwd_first = p.n_ops + 1;
    vt_prog_op(&p, VT_OPK_SOFTMAX, &x, 1, &pr, 1, NULL, 0, NULL, 0, "softmax");
    p.fwd_last = p.n_ops;
    vt_prog_op(&p, VT_OPK_XENT_LOSS, (const uint32_t[]){pr, y}, 2, &loss, 1, NULL, 0, NULL, 0, "loss");
    /* V_MIXED, V_REWRITTEN: the moments do not read v2, a velocity operation writes it after them */
    int other = v == V_MIXED || v == V_REWRITTEN;
    uint32_t mv = v == V_REWRITTEN ? W : V; /* V_REWRITTEN: nothing reads the moments (no dataflow check) */
    vt_prog_op(&p, VT_OPK_ADAM_MOMENTS, (const uint32_t[]){W, mv, other ? mv : V2}, 3,
               (const uint32_t[]){V, v == V_MIXED ? act : V2}, 2, NULL, 0, (const double[]){0.9, 0.999}, 2, "moments");
    if (other)
        vt_prog_op(&p, VT_OPK_SGD_VELOCITY, (const uint32_t[]){W, W, v == V_REWRITTEN ? W : V2}, 3, &V2, 1, NULL, 0, (const double[]){0.9, 0},
                   2, "velocity");
    vt_prog_op(&p, VT_OPK_ADAM_APPLY, (const uint32_t[]){W, mv, mv, t, lr}, 5, &W, 1, NULL, 0,
               (const double[]){0.9, 0.999, 1e-8}, 3, "apply");
    if (v == V_SGD_U8)
        vt_prog_op(&p, VT_OPK_SGD_APPLY, (const uint32_t[]){W, V, lr}, 3, &u8, 1, NULL, 0, NULL, 0, "sgd into bytes");
    if (v == V_ADAM_U8)
        vt_prog_op(&p, VT_OPK_ADAM_APPLY, (const uint32_t[]){W, V, V, t, lr}, 5, &u8, 1, NULL, 0,
                   (const double[]){0.9, 0.999, 1e-8}, 3, "adam into bytes");
    p.input = x, p.labels = y, p.probs = pr, p.loss = v == V_LOSS_U8 ? y : loss; /* vt_model_loss reads 4 bytes */
    vt_err e = vt_program_finish(&p);
    if (e) printf("variant %d refused: %s\n", v, vt_errmsg());
    vt_program_free(&p);
    return e;
}

static void test_finish(void)
{
    CHECK_OK(build(V_OK));
    CHECK(build(V_SGD_U8) != VT_OK, "an SGD update into a U8 tensor (4n bytes into n) is refused");
    CHECK(build(V_ADAM_U8) != VT_OK, "an Adam update into a U8 tensor is refused");
    CHECK(build(V_MIXED) != VT_OK, "moments into a state and an activation tensor are refused");
    CHECK(build(V_REWRITTEN) != VT_OK, "a multi-output writer's state output written again is refused");
    CHECK(build(V_LOSS_U8) != VT_OK, "a U8 tensor of 2 bytes as the loss is refused");
}

int main(void)
{
    vt_dataset ds;
    memset(&ds, 0, sizeof ds);
    test_finish();
    if (vt_data_load("digits", NULL, &ds) == VT_OK) {
        test_honest(&ds);
        test_words(&ds);
        vt_data_free(&ds);
    } else {
        CHECK(0, "the digits dataset: %s", vt_errmsg());
    }
    return vt_test_finish("test_game_inputs");
}
