/* vt_game_state.c - what the arbiter derives from the run for the judgement (docs/dispute.md):
 * the disputed operation's inputs, loaded from the trainer's answers and authenticated by the
 * hashes both parties agreed on, its committed log record, and the judgement replay
 * (vt_game_judge_op). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_cli.h"
#include "../common/vt_env.h"
#include "../model/vt_model.h"
#include "../rounding/vt_round.h"
#include "vt_dispute.h"
#include "vt_game_int.h"

/* Loads the input tensors of operation (s, j) at position p from the trainer's INPUTS, each
 * authenticated by the hash both parties agreed on: a tensor from the state at lo by its tensor
 * hash (the trainer's tensor hashes of lo must give its committed state hash), a tensor an
 * earlier operation wrote by that operation's output hash over all of its outputs, which the
 * trainer must therefore send whole. */
static int load_inputs(vti_game *g, uint64_t lo, uint64_t p, uint64_t s, uint32_t j, const uint8_t (*prefix)[32],
                       const uint8_t sh_lo[32])
{
    vt_model *m = &g->m;
    const vt_opdesc *o = &m->prog.op[j];
    uint8_t (*th)[32] = NULL;
    int need_tensors = 0;
    uint64_t *pos = calloc(o->n_in ? o->n_in : 1, sizeof *pos);
    if (!pos) {
        vti_decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, s, j, "out of memory");
        return -1;
    }
    for (uint32_t k = 0; k < o->n_in; k++) {
        if (vt_input_producer(m, p, o->in[k], &pos[k])) {
            free(pos);
            vti_decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, s, j, "%s", vt_errmsg());
            return -1;
        }
        need_tensors |= pos[k] == 0;
    }
    vt_msg ta;
    memset(&ta, 0, sizeof ta);
    if (need_tensors) {
        vt_msg_q_step q = {lo};
        if (vti_hash_list(g, VT_MSG_Q_TENSORS, &q, m->n_tensors, &ta, s, j)) {
            free(pos);
            return -1;
        }
        th = ta.body.hashes.h;
        uint8_t calc[32];
        if (vt_state_hash_of(lo, m->n_tensors, (const uint8_t(*)[32])th, calc) || memcmp(calc, sh_lo, 32) != 0) {
            vt_msg_free(&ta);
            free(pos);
            vti_decide(g, VT_LOSER_TRAINER, VT_REASON_INCONSISTENT, s, j,
                       "the trainer's tensor hashes of step %llu do not give its committed state hash", (unsigned long long)lo);
            return -1;
        }
    }
    vt_msg_q_inputs q = {s, j};
    vt_msg a;
    /* its inputs (inputs_body: what an honest trainer sends) after a restore to s - 1 and one step */
    vt_ask_bounds ib = vti_bounds(g, VT_ROLE_TRAINER, (uint64_t)vti_inputs_body(&m->prog, j),
                                  (double)(vti_restore_steps(g, s - 1) + 1), VT_MSG_Q_INPUTS, s, j);
    if (vti_ask(g, VT_ROLE_TRAINER, VT_MSG_Q_INPUTS, &q, VT_MSG_INPUTS, &ib, &a, s, j)) {
        vt_msg_free(&ta);
        free(pos);
        return -1;
    }
    int bad = 0;
    const vt_msg_inputs *in = &a.body.inputs;
    for (uint32_t k = 0; k < o->n_in && !bad; k++) {
        /* the tensors that authenticate input k: itself (from the state), or all of its producer's outputs */
        uint32_t one = o->in[k];
        const uint32_t *ids = &one;
        uint32_t n_ids = 1;
        if (pos[k]) {
            uint64_t ps;
            uint32_t pj;
            vt_seg_position(lo, m->n_ops, pos[k], &ps, &pj);
            ids = m->prog.op[pj].out, n_ids = m->prog.op[pj].n_out;
        }
        uint8_t h[VT_MAX_OP_OUTPUTS][32], got[32];
        for (uint32_t u = 0; u < n_ids && !bad; u++) {
            const vt_msg_tensor *t = NULL;
            for (uint16_t i = 0; i < in->n_tensors; i++)
                if (in->tensors[i].tensor_id == ids[u]) t = &in->tensors[i];
            if (!t || vt_model_tensor_load(m, ids[u], t->data, (size_t)t->rows * t->cols) ||
                vt_model_tensor_hash(m, ids[u], h[u])) {
                vti_decide(g, VT_LOSER_TRAINER, VT_REASON_BAD_INPUT, s, j,
                           "the trainer's inputs lack tensor %u (%s) or do not fit it", ids[u],
                           ids[u] < m->prog.n_tensors ? m->prog.t[ids[u]].name : "?");
                bad = -1;
            }
        }
        if (bad) break;
        const uint8_t *expect = pos[k] ? prefix[pos[k]] : th[o->in[k]];
        if (vt_output_hash_of(n_ids, (const uint8_t(*)[32])h, got) || memcmp(got, expect, 32) != 0) {
            vti_decide(g, VT_LOSER_TRAINER, VT_REASON_BAD_INPUT, s, j,
                       "the trainer's input %s does not match the hash both parties agreed on", m->prog.t[o->in[k]].name);
            bad = -1;
        }
    }
    vt_msg_free(&a);
    vt_msg_free(&ta);
    free(pos);
    return bad;
}

void vti_recompute(vti_game *g, uint64_t lo, uint64_t p, const vti_claim *ct, const vti_claim *ca,
                  const uint8_t (*prefix)[32], const uint8_t sh_lo[32])
{
    vt_model *m = &g->m;
    uint64_t s;
    uint32_t j;
    vt_seg_position(lo, m->n_ops, p, &s, &j);
    const vt_opdesc *o = &m->prog.op[j];
    const int rounded = vt_model_op_rounded(m, j);
    snprintf(g->res->op_name, sizeof g->res->op_name, "%s", o->name);
    vti_note(g, "disputed operation: step %llu, operation %u (%s)", (unsigned long long)s, j, o->name);
    if (load_inputs(g, lo, p, s, j, prefix, sh_lo)) return;
    vt_steplog mini;
    vt_steplog_init(&mini, s);
    vt_oplog *rec = NULL;
    if (rounded) {
        const vt_msg_leaf *L = vti_leaf(g, s);
        if (!L) return;
        vt_msg_q_step q = {s};
        vt_msg a;
        vt_ask_bounds lb = {(uint32_t)(vt_msg_min_body(VT_MSG_LOG) + g->needs.log_body), 0, 0};
        if (vti_ask(g, VT_ROLE_TRAINER, VT_MSG_Q_LOG, &q, VT_MSG_LOG, &lb, &a, s, j)) return;
        vt_steplog full;
        vt_steplog_init(&full, 0);
        uint8_t lh[32];
        /* decoded within what an honest log of one step can hold (a small zstd frame may inflate) */
        vt_log_limits ll = {g->needs.max_log_decoded + 64, 0, g->needs.max_log_entries + 1, 0};
        vt_err e = vt_steplog_decode_stored(a.body.log.data, a.body.log.len, s, &ll, &full, lh);
        vt_msg_free(&a);
        if (e || memcmp(lh, L->log_hash, 32) != 0 || full.step != s) {
            vt_steplog_free(&full);
            vti_decide(g, VT_LOSER_TRAINER, VT_REASON_LOG_MISMATCH, s, j,
                       "the trainer's log of step %llu does not match its committed log hash", (unsigned long long)s);
            return;
        }
        const vt_oplog *fo = NULL;
        for (uint32_t i = 0; i < full.n_ops; i++)
            if (full.ops[i].op_id == j) fo = &full.ops[i];
        if (m->rcp.bound.rounding == VT_ROUNDING_EXACT) {
            /* exact rounding writes no log: a committed log with any record is not the rule's */
            e = full.n_ops == 0 ? VT_OK : VT_ERR_MISMATCH;
        } else {
            e = fo ? vt_steplog_add_op(&mini, j, fo->n_elems, &rec) : VT_ERR_MISMATCH;
            for (uint64_t k = 0; !e && k < fo->n_entries; k++) e = vt_oplog_push(rec, fo->e[k]);
        }
        vt_steplog_free(&full);
        if (e) {
            vt_steplog_free(&mini);
            vti_decide(g, VT_LOSER_TRAINER, VT_REASON_LOG_MISMATCH, s, j,
                       m->rcp.bound.rounding == VT_ROUNDING_EXACT
                       ? "the run rounds exactly, yet the trainer's committed log of step %llu has records (op %u)"
                       : "the trainer's committed log of step %llu has no valid record for operation %u",
                       (unsigned long long)s, j);
            return;
        }
    }
    vt_judgement jd;
    vt_game_judge_op(m, &g->ds, s, j, rounded ? &mini : NULL, ct->h, ca->h, &jd);
    vt_steplog_free(&mini);
    g->res->recompute_seconds = jd.recompute_seconds;
    g->res->hash_seconds = jd.hash_seconds;
    vti_decide(g, jd.loser, jd.reason, s, j, "%s", jd.why);
}

void vt_game_judge_op(vt_model *m, const vt_dataset *ds, uint64_t s, uint32_t j, vt_steplog *log,
                      const uint8_t ht[32], const uint8_t ha[32], vt_judgement *out)
{
    memset(out, 0, sizeof *out);
    const vt_opdesc *o = &m->prog.op[j];
    vt_steplog none;
    vt_steplog_init(&none, s);
    if (!log) log = &none;
    /* scratch pages touched before timing: the recomputation is what is measured, not page faults */
    memset(m->x64, 0, m->scratch * sizeof(double));
    memset(m->x64b, 0, m->scratch * sizeof(double));
    memset(m->b64, 0, m->scratch * sizeof(double));
    double t0 = vt_now();
    vt_rctx rctx;
    vt_rctx_init(&rctx, VT_RMODE_REPLAY, m->rcp.bound);
    vt_err e = vt_rctx_begin_step(&rctx, s, log);
    m->step = s - 1;
    if (!e) e = vt_model_exec_op(m, ds, &rctx, s, j);
    if (vt_env_check() != VT_OK) e = VT_ERR_ENV; /* FTZ / rounding changed: no verdict from wrong bits */
    double t1 = vt_now();
    uint8_t hr[32];
    if (!e) e = vt_model_output_hash(m, j, hr);
    out->recompute_seconds = t1 - t0;
    out->hash_seconds = vt_now() - t1;
    vt_steplog_free(&none);
#define JUDGE(l, r, ...) (out->loser = (l), out->reason = (r), snprintf(out->why, sizeof out->why, __VA_ARGS__))
    if (e == VT_ERR_IMPLAUSIBLE) {
        JUDGE(VT_LOSER_TRAINER, rctx.fault.has_entry ? VT_REASON_IMPLAUSIBLE : VT_REASON_MISSING_ENTRY, "%s (%s)",
              vt_errmsg(), o->name);
        return;
    }
    if (e == VT_ERR_DIVERGED) {
        JUDGE(VT_LOSER_TRAINER, VT_REASON_WRONG_OUTPUT, "the rule diverges on the agreed inputs: %s", vt_errmsg());
        return;
    }
    if (e) {
        JUDGE(VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, "the arbiter could not recompute %s: %s", o->name, vt_errmsg());
        return;
    }
    /* The replay judged every log entry, and every element without one, against the exact value
     * (rounding_log/vt_rlog.h): a missing or implausible entry was decided above, against the
     * trainer, and otherwise hr is the one output every honest party computes from these inputs
     * and this log, whatever its order. So it settles the claims by itself. */
    int t_ok = memcmp(hr, ht, 32) == 0, a_ok = memcmp(hr, ha, 32) == 0;
    if (t_ok)
        JUDGE(VT_LOSER_AUDITOR, VT_REASON_WRONG_OUTPUT,
              "%s of step %llu recomputed by the arbiter equals the trainer's output: the auditor's claim is wrong",
              o->name, (unsigned long long)s);
    else
        JUDGE(a_ok ? VT_LOSER_TRAINER : VT_LOSER_BOTH, VT_REASON_WRONG_OUTPUT,
              "%s of step %llu recomputed by the arbiter differs from the trainer's committed output%s", o->name,
              (unsigned long long)s, a_ok ? " and equals the auditor's" : " (and from the auditor's)");
#undef JUDGE
}

/* ----------------------------------------------------------- the state of step hi */

/* The hashes of the state tensors no operation of the segment writes (their value at hi is their
 * value at lo): the trainer's tensor hashes of lo, which must give the agreed state hash of lo.
 * -1 after deciding. */
static int hashes_from_lo(vti_game *g, uint64_t lo, uint64_t hi, uint64_t total, const uint8_t sh_lo[32],
                          uint8_t (*th)[32])
{
    vt_model *m = &g->m;
    vt_msg tl;
    vt_msg_q_step ql = {lo};
    uint8_t c[32];
    if (vti_hash_list(g, VT_MSG_Q_TENSORS, &ql, m->n_tensors, &tl, hi, 0)) return -1;
    if (vt_state_hash_of(lo, m->n_tensors, (const uint8_t(*)[32])tl.body.hashes.h, c) || memcmp(c, sh_lo, 32) != 0) {
        vt_msg_free(&tl);
        vti_decide(g, VT_LOSER_TRAINER, VT_REASON_INCONSISTENT, hi, 0,
                   "the trainer's tensor hashes of step %llu do not give its committed state hash", (unsigned long long)lo);
        return -1;
    }
    for (uint32_t t = 0; t < m->n_tensors; t++) {
        uint64_t q = 1;
        if (vt_input_producer(m, total, t, &q) == VT_OK && q == 0) memcpy(th[t], tl.body.hashes.h[t], 32);
    }
    vt_msg_free(&tl);
    return 0;
}

/* The hashes of the state tensors whose last writer has several outputs: the trainer's tensor hashes
 * of hi, which must combine to that writer's agreed output hash (prefix). *ok = 0 where the state
 * cannot be derived; -1 after deciding. */
static int hashes_of_multi(vti_game *g, uint64_t lo, uint64_t hi, uint64_t total, const uint8_t (*prefix)[32],
                           uint8_t (*th)[32], int *ok_io)
{
    vt_model *m = &g->m;
    int ok = *ok_io;
    vt_msg tt;
    memset(&tt, 0, sizeof tt);
    vt_msg_q_step qh = {hi};
    if (vti_hash_list(g, VT_MSG_Q_TENSORS, &qh, m->n_tensors, &tt, hi, 0)) return -1;
    for (uint32_t t = 0; t < m->n_tensors && ok; t++) {
        uint64_t q = 0, qs;
        uint32_t qj;
        ok = vt_input_producer(m, total, t, &q) == VT_OK;
        if (!ok) break;
        if (q == 0) continue; /* from lo (hashes_from_lo) */
        vt_seg_position(lo, m->n_ops, q, &qs, &qj);
        const vt_opdesc *w = &m->prog.op[qj];
        if (w->n_out == 1) continue;
        uint8_t hs[VT_MAX_OP_OUTPUTS][32], c[32];
        for (uint32_t u = 0; u < w->n_out && ok; u++) {
            ok = w->out[u] < m->n_tensors; /* only state tensors have hashes at hi */
            if (ok) memcpy(hs[u], tt.body.hashes.h[w->out[u]], 32);
        }
        if (ok && (vt_output_hash_of(w->n_out, (const uint8_t(*)[32])hs, c) || memcmp(c, prefix[q], 32) != 0)) {
            vt_msg_free(&tt);
            vti_decide(g, VT_LOSER_TRAINER, VT_REASON_INCONSISTENT, hi, qj,
                       "the trainer's tensor hashes of step %llu do not give the agreed output of %s",
                       (unsigned long long)hi, w->name);
            return -1;
        }
        memcpy(th[t], tt.body.hashes.h[t], 32);
    }
    vt_msg_free(&tt);
    *ok_io = ok;
    return 0;
}

void vti_judge_state(vti_game *g, uint64_t lo, uint64_t hi, const uint8_t (*prefix)[32], const vti_claim *ct,
                     const vti_claim *ca, const uint8_t sh_lo[32])
{
    /* each state tensor's hash is its last writer's agreed output hash; where that writer has
     * several outputs, the trainer's tensor hashes of hi must combine to it */
    vt_model *m = &g->m;
    uint64_t total = (hi - lo) * m->n_ops + 1;
    uint8_t(*th)[32] = calloc(m->n_tensors + 1, 32), r[32];
    int ok = th != NULL, multi = 0, from_lo = 0;
    for (uint32_t t = 0; t < m->n_tensors && ok; t++) {
        uint64_t q = 0, qs;
        uint32_t qj;
        ok = vt_input_producer(m, total, t, &q) == VT_OK;
        if (ok && q == 0) { /* no operation writes it: its value at hi is its value at lo */
            from_lo = 1;
            continue;
        }
        if (ok) vt_seg_position(lo, m->n_ops, q, &qs, &qj);
        if (ok && m->prog.op[qj].n_out == 1) memcpy(th[t], prefix[q], 32);
        else multi = 1;
    }
    if ((ok && from_lo && hashes_from_lo(g, lo, hi, total, sh_lo, th)) ||
        (ok && multi && hashes_of_multi(g, lo, hi, total, prefix, th, &ok))) {
        free(th);
        return;
    }
    int bad = !ok || vt_state_hash_of(hi, g->m.n_tensors, (const uint8_t(*)[32])th, r);
    free(th);
    if (bad)
        vti_decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, hi, 0, "cannot derive the state of step %llu",
                   (unsigned long long)hi);
    else if (memcmp(r, ct->h, 32) == 0)
        vti_decide(g, VT_LOSER_AUDITOR, VT_REASON_WRONG_OUTPUT, hi, 0,
                   "every operation agrees and the trainer's committed state hash of step %llu is the hash of their "
                   "outputs", (unsigned long long)hi);
    else
        vti_decide(g, memcmp(r, ca->h, 32) == 0 ? VT_LOSER_TRAINER : VT_LOSER_BOTH, VT_REASON_WRONG_OUTPUT, hi, 0,
                   "every operation agrees but the trainer's committed state hash of step %llu is not the hash of "
                   "their outputs", (unsigned long long)hi);
}
