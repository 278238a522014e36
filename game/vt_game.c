/* vt_game.c - the arbiter's game engine: the questions, the checks of the challenge and of the
 * trainer's service, the bisection over steps and over operations, the verdicts. The derivation
 * of the disputed operation's inputs and state and its judgement are in vt_game_state.c, the
 * resource limits from the program's costs in vt_game_cost.c. Read docs/dispute.md first. */
#include "vt_game.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_hash.h"
#include "../data/vt_data.h"
#include "../merkle/vt_merkle.h"
#include "../merkle/vt_sign.h"
#include "../model/vt_model.h"
#include "../run/vt_train.h"
#include "vt_dispute.h"
#include "vt_game_int.h"

const char *vt_reason_name(int code)
{
    static const char *const n[] = {"none",           "no valid answer",   "bad proof",        "inconsistent answer",
                                    "implausible log entry", "missing log entry", "wrong output", "manifest mismatch",
                                    "invalid challenge", "log mismatch",      "bad input",        "cannot judge",
                                    "equivocation", "over the arbiter's limits", "stale service record",
                                    "record shorter than the floor", "withdrawn run", "expired service record",
                                    "auditor gone", "clock skew", "preempted"};
    return code >= 0 && code < (int)(sizeof n / sizeof n[0]) ? n[code] : "?";
}

void vt_commitment_bytes_hash(const uint8_t c[176], uint8_t out[32])
{
    if (vt_sha256(c, 176, out)) memset(out, 0, 32);
}

static void set_verdict(vt_msg_verdict *v, const uint8_t cm_hash[32], int loser, int reason, uint64_t step, uint32_t op,
                        const char *text);

void vti_decide(vti_game *g, int loser, int reason, uint64_t step, uint32_t op, const char *fmt, ...)
{
    if (g->done) return;
    g->done = 1;
    char text[VT_MSG_TEXT_MAX + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    set_verdict(&g->res->v, g->cm_hash, loser, reason, step, op, text);
    if (g->ch) vt_game_bind_verdict(&g->res->v, g->ch, g->io->arbiter_pk, g->have_tnonce ? g->trainer_nonce : NULL,
                                    g->io->time);
}

void vti_note(vti_game *g, const char *fmt, ...)
{
    if (!g->io->note) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    g->io->note(g->io->ctx, line);
}

static const char *party_name(int p) { return p == VT_ROLE_TRAINER ? "trainer" : "auditor"; }

/* Steps a party recomputes to re-create the state of step s: from its checkpoint at or before s. */
uint64_t vti_restore_steps(const vti_game *g, uint64_t s)
{
    return g->rcp.checkpoint_every ? s % g->rcp.checkpoint_every : s;
}

/* Bounds of a question whose answer needs `steps` recomputed steps, the computation named by
 * (kind, a, b): the deadline is extended by their time at every ask, the party's clock credited
 * with it once per computation (a cached answer costs nothing the second time). */
vt_ask_bounds vti_bounds(vti_game *g, int party, uint64_t max_body, double steps, int kind, uint64_t a, uint64_t b)
{
    /* the auditor computed everything it is asked before it challenged (vt_challenge.c): no work
     * time, so a lying auditor holds a game for its clock at most */
    if (party == VT_ROLE_AUDITOR) steps = 0;
    vt_ask_bounds r = {max_body > UINT32_MAX ? UINT32_MAX : (uint32_t)max_body, vti_work_ms(g, steps), 0};
    if (r.work_ms <= 0) return r;
    int p = party & 3;
    for (int i = 0; i < g->n_credited[p]; i++)
        if (g->credited[p][i].kind == kind && g->credited[p][i].a == a && g->credited[p][i].b == b) return r;
    if (g->n_credited[p] < 32) {
        g->credited[p][g->n_credited[p]].kind = kind, g->credited[p][g->n_credited[p]].a = a;
        g->credited[p][g->n_credited[p]].b = b;
        g->n_credited[p]++;
        r.credit = 1;
    }
    return r;
}

/* One question to one party. Returns 0 with *ans, or -1 after deciding against the party. */
int vti_ask(vti_game *g, int party, int qtype, const void *q, int atype, const vt_ask_bounds *b, vt_msg *ans,
               uint64_t step, uint32_t op)
{
    static const vt_ask_bounds none = {0, 0, 0};
    memset(ans, 0, sizeof *ans);
    g->res->rounds++;
    vt_err e = g->io->ask(g->io->ctx, party, qtype, q, atype, b ? b : &none, ans);
    if (e == VT_ERR_INTERNAL) { /* the arbiter's own failure (e.g. no descriptor left): nobody loses */
        vti_decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, step, op, "the arbiter could not ask the %s %s: %s",
                   party_name(party), vt_msg_type_name(qtype), vt_errmsg());
        return -1;
    }
    int gone = e && party == VT_ROLE_AUDITOR && g->io->gone ? g->io->gone(g->io->ctx, party) : 0;
    if (gone) { /* its connection dropped and it did not come back, or it gave its slot away: nobody is at fault */
        vti_decide(g, VT_LOSER_NONE, gone == VT_REASON_PREEMPTED ? VT_REASON_PREEMPTED : VT_REASON_AUDITOR_GONE, step, op,
                   "%s: nobody is at fault", vt_errmsg());
        return -1;
    }
    if (e && party == VT_ROLE_TRAINER && g->asking_service && g->record_expired) {
        /* a trainer is bound to its address only until its record expires */
        vti_decide(g, VT_LOSER_NONE, VT_REASON_EXPIRED_RECORD, step, op,
                   "the trainer's service record expired at %llu (seconds since 1970; the challenge came at %llu) and the "
                   "trainer gave no current record (%s): nobody is at fault",
                   (unsigned long long)g->record_expiry, (unsigned long long)g->io->time, vt_errmsg());
        return -1;
    }
    if (e) {
        vti_decide(g, party == VT_ROLE_TRAINER ? VT_LOSER_TRAINER : VT_LOSER_AUDITOR, VT_REASON_NO_ANSWER, step, op,
                   "the %s gave no valid answer to %s: %s", party_name(party), vt_msg_type_name(qtype), vt_errmsg());
        return -1;
    }
    if (ans->hdr.type == VT_MSG_ERROR) {
        vti_decide(g, party == VT_ROLE_TRAINER ? VT_LOSER_TRAINER : VT_LOSER_AUDITOR, VT_REASON_NO_ANSWER, step, op,
                   "the %s refused to answer %s: %s", party_name(party), vt_msg_type_name(qtype),
                   ans->body.error.message);
        vt_msg_free(ans);
        return -1;
    }
    return 0;
}

static int expected_has_state(const vt_recipe *rcp, uint64_t s)
{
    return vt_recipe_has_state(rcp, s);
}

/* The trainer's leaf of step s, checked against the signed root. NULL after deciding. */
const vt_msg_leaf *vti_leaf(vti_game *g, uint64_t s)
{
    for (size_t i = 0; i < g->n_leaves; i++)
        if (g->leaf_steps[i] == s) return &g->leaves[i];
    vt_msg_q_step q = {s};
    vt_msg a;
    if (vti_ask(g, VT_ROLE_TRAINER, VT_MSG_Q_LEAF, &q, VT_MSG_LEAF, NULL, &a, s, 0)) return NULL;
    vt_msg_leaf L = a.body.leaf;
    vt_msg_free(&a);
    uint8_t calc[32];
    if (L.step != s || L.tree_size != g->step_count || L.has_state != expected_has_state(&g->rcp, s)) {
        vti_decide(g, VT_LOSER_TRAINER, VT_REASON_BAD_PROOF, s, 0,
                   "the trainer's leaf for step %llu names step %llu, tree size %llu or a state schedule that do not match "
                   "its commitment",
                   (unsigned long long)s, (unsigned long long)L.step, (unsigned long long)L.tree_size);
        return NULL;
    }
    if (vt_step_leaf(s, L.state_hash, L.has_state, L.log_hash, calc) || memcmp(calc, L.leaf, 32) != 0 ||
        vt_merkle_verify(L.leaf, s, L.tree_size, (const uint8_t(*)[32])L.path, L.n_path, g->root) != 0) {
        vti_decide(g, VT_LOSER_TRAINER, VT_REASON_BAD_PROOF, s, 0,
                   "the trainer's leaf for step %llu does not verify against its signed Merkle root", (unsigned long long)s);
        return NULL;
    }
    if (g->n_leaves == g->cap_leaves) {
        size_t nc = g->cap_leaves ? 2 * g->cap_leaves : 16;
        vt_msg_leaf *nl = realloc(g->leaves, nc * sizeof *nl);
        uint64_t *ns = nl ? realloc(g->leaf_steps, nc * sizeof *ns) : NULL;
        if (nl) g->leaves = nl;
        if (!nl || !ns) {
            vti_decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, s, 0, "the arbiter ran out of memory");
            return NULL;
        }
        g->leaf_steps = ns;
        g->cap_leaves = nc;
    }
    g->leaves[g->n_leaves] = L;
    g->leaf_steps[g->n_leaves] = s;
    return &g->leaves[g->n_leaves++];
}

static int auditor_state(vti_game *g, uint64_t s, uint8_t out[32])
{
    vt_msg_q_step q = {s};
    vt_msg a;
    if (vti_ask(g, VT_ROLE_AUDITOR, VT_MSG_Q_STATE, &q, VT_MSG_STATE_CLAIM, NULL, &a, s, 0)) return -1;
    int bad = a.body.state_claim.step != s;
    memcpy(out, a.body.state_claim.state_hash, 32);
    vt_msg_free(&a);
    if (bad) vti_decide(g, VT_LOSER_AUDITOR, VT_REASON_INCONSISTENT, s, 0, "the auditor answered for another step");
    return bad ? -1 : 0;
}

static int chain_claim(vti_game *g, int party, uint64_t lo, uint64_t hi, uint64_t pos, uint64_t total, vti_claim *c)
{
    vt_msg_q_chain q = {lo, hi, pos};
    vt_msg a;
    uint64_t step = 0;
    uint32_t op = 0;
    if (pos < total) vt_seg_position(lo, g->m.n_ops, pos, &step, &op);
    /* the segment's chain: a restore to lo, then hi - lo steps */
    vt_ask_bounds b = vti_bounds(g, party, 0, (double)(vti_restore_steps(g, lo) + (hi - lo)), VT_MSG_Q_CHAIN, lo, hi);
    if (vti_ask(g, party, VT_MSG_Q_CHAIN, &q, VT_MSG_CHAIN_CLAIM, &b, &a, step, op)) return -1;
    const vt_msg_chain_claim *cc = &a.body.chain_claim;
    int bad = cc->seg_from != lo || cc->seg_to != hi || cc->pos != pos || cc->total_positions != total;
    memcpy(c->C, cc->chain_hash, 32);
    memcpy(c->h, cc->output_hash, 32);
    vt_msg_free(&a);
    if (bad)
        vti_decide(g, party == VT_ROLE_TRAINER ? VT_LOSER_TRAINER : VT_LOSER_AUDITOR, VT_REASON_INCONSISTENT, step, op,
                   "the %s's chain claim does not answer the question (segment, position or %llu positions)",
                   party_name(party), (unsigned long long)total);
    return bad ? -1 : 0;
}

/* The trainer's list of hashes (PREFIX or TENSORS), checked for its length. */
int vti_hash_list(vti_game *g, int qtype, const void *q, uint64_t want_n, vt_msg *a, uint64_t step, uint32_t op)
{
    /* PREFIX: the segment's chain (a restore to lo, hi - lo steps); TENSORS: a restore to the step */
    vt_ask_bounds b;
    uint64_t body = vt_msg_min_body(VT_MSG_HASHES) + 32 * want_n;
    if (qtype == VT_MSG_Q_PREFIX) {
        const vt_msg_q_chain *qc = q;
        b = vti_bounds(g, VT_ROLE_TRAINER, body, (double)(vti_restore_steps(g, qc->seg_from) + (qc->seg_to - qc->seg_from)),
                   VT_MSG_Q_CHAIN, qc->seg_from, qc->seg_to);
    } else {
        const vt_msg_q_step *qs = q;
        b = vti_bounds(g, VT_ROLE_TRAINER, body, (double)vti_restore_steps(g, qs->step), VT_MSG_Q_TENSORS, qs->step, 0);
    }
    if (vti_ask(g, VT_ROLE_TRAINER, qtype, q, VT_MSG_HASHES, &b, a, step, op)) return -1;
    if (a->body.hashes.n != want_n) {
        vti_decide(g, VT_LOSER_TRAINER, VT_REASON_INCONSISTENT, step, op, "the trainer sent %u hashes, %llu were asked for",
                   a->body.hashes.n, (unsigned long long)want_n);
        vt_msg_free(a);
        return -1;
    }
    return 0;
}

static void set_verdict(vt_msg_verdict *v, const uint8_t cm_hash[32], int loser, int reason, uint64_t step, uint32_t op,
                        const char *text)
{
    memset(v, 0, sizeof *v);
    memcpy(v->commitment_hash, cm_hash, 32);
    v->step = step;
    v->op = op;
    v->loser = (uint8_t)loser;
    v->reason_code = (uint8_t)reason;
    snprintf(v->reason, sizeof v->reason, "%s", text);
    /* keep the text within the message's character rules: printable ASCII only */
    for (char *c = v->reason; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) *c = '?';
}

void vt_game_bind_verdict(vt_msg_verdict *v, const vt_msg_challenge *ch, const uint8_t arbiter_pk[32],
                          const uint8_t *trainer_nonce, uint64_t time)
{
    if (arbiter_pk) memcpy(v->arbiter_pk, arbiter_pk, 32);
    else memset(v->arbiter_pk, 0, 32);
    memcpy(v->auditor_pk, ch->auditor_pk, 32);
    v->claimed_step = ch->claimed_step;
    memcpy(v->claimed_state, ch->auditor_state_hash, 32);
    memcpy(v->auditor_nonce, ch->nonce, 32);
    if (trainer_nonce) memcpy(v->trainer_nonce, trainer_nonce, 32);
    else memset(v->trainer_nonce, 0, 32);
    v->time = time;
}

int vt_game_verdict_for(const vt_msg_verdict *v, const vt_msg_challenge *ch, const uint8_t arbiter_pk[32], char *why,
                        size_t cap)
{
    uint8_t cm_hash[32];
    vt_commitment_bytes_hash(ch->commitment, cm_hash);
    const char *bad = memcmp(v->commitment_hash, cm_hash, 32) != 0       ? "another commitment"
                      : memcmp(v->auditor_pk, ch->auditor_pk, 32) != 0   ? "another auditor key"
                      : v->claimed_step != ch->claimed_step               ? "another challenged step"
                      : memcmp(v->claimed_state, ch->auditor_state_hash, 32) != 0 ? "another claimed state"
                      : memcmp(v->auditor_nonce, ch->nonce, 32) != 0     ? "another nonce (another game)"
                      : memcmp(v->arbiter_pk, arbiter_pk, 32) != 0       ? "another arbiter key than the one that signed it"
                                                                          : NULL;
    if (!bad) return 0;
    if (cap) snprintf(why, cap, "the verdict names %s: it is not the verdict of this challenge", bad);
    return -1;
}

int vt_game_check_challenge(const vt_msg_challenge *ch, const uint8_t arbiter_pk[32], uint64_t now, vt_service *sv,
                            vt_msg_verdict *v)
{
    const uint8_t *c = ch->commitment;
    uint8_t cm_hash[32];
    vt_commitment_bytes_hash(c, cm_hash);
    char why[VT_MSG_TEXT_MAX + 1];
    why[0] = 0;
    if (memcmp(c, "VTCM", 4) != 0 || vt_get_u32le(c + 4) != 1)
        snprintf(why, sizeof why, "the challenge does not carry a commitment file");
    else if (vt_sign_init() || vt_sign_verify_detached(c + VT_COMMITMENT_BODY_LEN, c, VT_COMMITMENT_BODY_LEN, c + 80))
        snprintf(why, sizeof why, "the commitment in the challenge is not signed by its trainer key");
    else if (!arbiter_pk || memcmp(ch->arbiter_pk, arbiter_pk, 32) != 0)
        snprintf(why, sizeof why, "the challenge names another arbiter than this one");
    else if (vt_service_parse(ch->service, ch->service_len, sv) != VT_OK)
        snprintf(why, sizeof why, "the trainer's service record in the challenge is invalid: %s", vt_errmsg());
    else if (memcmp(sv->trainer_pk, c + 80, 32) != 0)
        snprintf(why, sizeof why, "the service record is not signed by the commitment's trainer key: the trainer's "
                                  "address comes only from a record the trainer signed");
    else if (memcmp(sv->manifest_hash, c + 8, 32) != 0)
        snprintf(why, sizeof why, "the service record names another run (manifest) than the commitment");
    else if (!vt_service_names_arbiter(sv, arbiter_pk))
        snprintf(why, sizeof why, "the trainer's service record does not name this arbiter's key among the %u it "
                 "answers: the trainer never accepted this arbiter", (unsigned)sv->n_arbiters);
    if (!why[0]) return 0;
    set_verdict(v, cm_hash, VT_LOSER_AUDITOR, VT_REASON_BAD_CHALLENGE, 0, 0, why);
    vt_game_bind_verdict(v, ch, arbiter_pk, NULL, now);
    return -1;
}

/* The record's times (docs/dispute.md "Fresh service records"), in the game so that its transcript
 * records the decision: a record signed after this arbiter's clock (beyond the allowance) binds
 * nobody; one signed for less than the floor convicts the trainer that signed it. An expired record
 * passes: the game asks the trainer for its current one. */
static int check_record_times(vti_game *g, const vt_service *sv)
{
    uint64_t now = g->io->time, at = vt_service_signed_at(sv);
    if (at > now + VT_CLOCK_SKEW_S) {
        vti_decide(g, VT_LOSER_NONE, VT_REASON_CLOCK_SKEW, 0, 0,
                   "the trainer's service record was signed at %llu (seconds since 1970), %llu s after this arbiter's time "
                   "%llu: one of the two clocks is wrong (more than %d s apart); nobody is at fault",
                   (unsigned long long)at, (unsigned long long)(at - now), (unsigned long long)now, VT_CLOCK_SKEW_S);
        return -1;
    }
    if (sv->expiry < at || sv->expiry - at < VT_RECORD_FLOOR_S) {
        vti_decide(g, VT_LOSER_TRAINER, VT_REASON_SHORT_RECORD, 0, 0,
                   "the trainer signed a service record valid for %lld s (signed at %llu, expires at %llu), under the floor "
                   "of %d s: an auditor could not bring it to an arbiter in time",
                   (long long)((int64_t)sv->expiry - (int64_t)at), (unsigned long long)at, (unsigned long long)sv->expiry,
                   VT_RECORD_FLOOR_S);
        return -1;
    }
    return 0;
}

/* Parse and check the challenge's commitment and the trainer's service record; hand the
 * verified address over (nothing is dialled before). */
static int check_commitment(vti_game *g, const vt_msg_challenge *ch)
{
    const uint8_t *c = ch->commitment;
    vt_commitment_bytes_hash(c, g->cm_hash);
    vt_service sv;
    if (vt_game_check_challenge(ch, g->io->arbiter_pk, g->io->time, &sv, &g->res->v)) {
        g->done = 1;
        return -1;
    }
    if (check_record_times(g, &sv)) return -1;
    g->record_serial = sv.serial;
    g->record_expiry = sv.expiry;
    g->record_expired = sv.expiry <= g->io->time;
    memcpy(g->manifest_hash, c + 8, 32);
    g->step_count = vt_get_u64le(c + 40);
    memcpy(g->root, c + 48, 32);
    memcpy(g->trainer_pk, c + 80, 32);
    snprintf(g->res->endpoint, sizeof g->res->endpoint, "%s", sv.addr);
    if (g->io->endpoint) g->io->endpoint(g->io->ctx, sv.addr);
    return 0;
}

/* The trainer's current service record at the signed address, and its nonce (docs/dispute.md
 * "Fresh service records"). Unreachable with an expired record: nobody at fault. The record it
 * serves for this run must have the lifetime floor left (less the clocks' allowance), else it
 * loses; serving another run at the address before its record of this run expired is a withdrawal
 * (it loses), after that the auditor's record is stale (nobody loses). */
static int check_service(vti_game *g, const vt_msg_challenge *ch)
{
    vt_msg_q_service q;
    memcpy(q.commitment_hash, g->cm_hash, 32);
    memcpy(q.auditor_nonce, ch->nonce, 32);
    vt_msg a;
    g->asking_service = 1;
    int failed = vti_ask(g, VT_ROLE_TRAINER, VT_MSG_Q_SERVICE, &q, VT_MSG_SERVICE, NULL, &a, 0, 0);
    g->asking_service = 0;
    if (failed) return -1;
    const vt_msg_service *r = &a.body.service;
    vt_service cur;
    int echo = memcmp(r->commitment_hash, q.commitment_hash, 32) == 0 && memcmp(r->auditor_nonce, q.auditor_nonce, 32) == 0;
    int parsed = echo && vt_service_parse(r->record, r->record_len, &cur) == VT_OK;
    if (echo) {
        memcpy(g->trainer_nonce, r->trainer_nonce, 32);
        g->have_tnonce = 1;
    }
    vt_msg_free(&a);
    if (!echo) {
        vti_decide(g, VT_LOSER_TRAINER, VT_REASON_NO_ANSWER, 0, 0,
                   "the trainer's SERVICE does not answer this game's question (commitment hash or nonce)");
        return -1;
    }
    if (!parsed || memcmp(cur.trainer_pk, g->trainer_pk, 32) != 0) {
        vti_decide(g, VT_LOSER_TRAINER, VT_REASON_NO_ANSWER, 0, 0, "the trainer's current service record %s",
                   parsed ? "is signed by another key" : "is invalid");
        return -1;
    }
    uint64_t now = g->io->time;
    if (memcmp(cur.manifest_hash, g->manifest_hash, 32) == 0) { /* this run is served here */
        if (cur.expiry < now + VT_RECORD_FLOOR_S - VT_CLOCK_SKEW_S) {
            vti_decide(g, VT_LOSER_TRAINER, VT_REASON_SHORT_RECORD, 0, 0,
                       "the trainer serves a record of this run (serial %llu) that expires at %llu, %lld s after the "
                       "challenge came (%llu): under the floor of %d s less the clocks' allowance of %d s",
                       (unsigned long long)cur.serial, (unsigned long long)cur.expiry,
                       (long long)((int64_t)cur.expiry - (int64_t)now), (unsigned long long)now, VT_RECORD_FLOOR_S,
                       VT_CLOCK_SKEW_S);
            return -1;
        }
        return 0;
    }
    if (cur.serial <= g->record_serial) {
        vti_decide(g, VT_LOSER_TRAINER, VT_REASON_NO_ANSWER, 0, 0,
                   "the trainer serves another run at %s, under an older record (serial %llu) than the one it signed for "
                   "this run (serial %llu)", g->res->endpoint, (unsigned long long)cur.serial,
                   (unsigned long long)g->record_serial);
        return -1;
    }
    if (g->record_expired) {
        vti_decide(g, VT_LOSER_NONE, VT_REASON_STALE_RECORD, 0, 0,
                   "not this run: the trainer's key at %s serves another run under a newer record (serial %llu), and its "
                   "record of this run (serial %llu) expired at %llu, before the challenge came (%llu): nobody is at fault",
                   g->res->endpoint, (unsigned long long)cur.serial, (unsigned long long)g->record_serial,
                   (unsigned long long)g->record_expiry, (unsigned long long)now);
        return -1;
    }
    vti_decide(g, VT_LOSER_TRAINER, VT_REASON_WITHDRAWN, 0, 0,
               "the trainer withdrew this run: its key at %s serves another run (record serial %llu) although its record of "
               "this run (serial %llu) is valid until %llu and the challenge came at %llu",
               g->res->endpoint, (unsigned long long)cur.serial, (unsigned long long)g->record_serial,
               (unsigned long long)g->record_expiry, (unsigned long long)now);
    return -1;
}

/* The commitment the trainer stands behind must be the one in the challenge: two different
 * valid signatures of the trainer's key over the same manifest are an equivocation. */
static int check_equivocation(vti_game *g, const vt_msg_challenge *ch)
{
    vt_msg_q_step q = {0};
    vt_msg a;
    if (vti_ask(g, VT_ROLE_TRAINER, VT_MSG_Q_COMMITMENT, &q, VT_MSG_COMMITMENT, NULL, &a, 0, 0)) return -1;
    int same = a.body.log.len == VT_MSG_COMMITMENT_LEN && memcmp(a.body.log.data, ch->commitment, 176) == 0;
    int valid = a.body.log.len == VT_MSG_COMMITMENT_LEN && memcmp(a.body.log.data, "VTCM", 4) == 0 &&
                memcmp(a.body.log.data + 8, g->manifest_hash, 32) == 0 &&
                memcmp(a.body.log.data + 80, g->trainer_pk, 32) == 0 &&
                vt_sign_verify_detached(a.body.log.data + VT_COMMITMENT_BODY_LEN, a.body.log.data,
                                        VT_COMMITMENT_BODY_LEN, g->trainer_pk) == 0;
    vt_msg_free(&a);
    if (same) return 0;
    if (valid)
        vti_decide(g, VT_LOSER_TRAINER, VT_REASON_EQUIVOCATION, 0, 0,
                   "the trainer stands behind another commitment than the auditor's, both signed by its key for the "
                   "same manifest: it signed two different roots for one run");
    else
        vti_decide(g, VT_LOSER_TRAINER, VT_REASON_INCONSISTENT, 0, 0,
                   "the trainer does not stand behind the commitment it signed");
    return -1;
}

static int load_manifest(vti_game *g, const char *data_root, vt_order order)
{
    vt_msg_q_step q = {0};
    vt_msg a;
    if (vti_ask(g, VT_ROLE_TRAINER, VT_MSG_Q_MANIFEST, &q, VT_MSG_MANIFEST, NULL, &a, 0, 0)) return -1;
    uint8_t h[32], dh[32];
    vt_err e = vt_sha256(a.body.log.data, a.body.log.len, h);
    int match = !e && memcmp(h, g->manifest_hash, 32) == 0;
    if (match) e = vt_manifest_parse((const char *)a.body.log.data, a.body.log.len, &g->rcp, dh);
    vt_msg_free(&a);
    if (!match || e) {
        vti_decide(g, VT_LOSER_TRAINER, VT_REASON_MANIFEST, 0, 0, "the trainer's manifest %s",
                   !match ? "does not match its commitment" : "cannot be parsed");
        return -1;
    }
    /* the game's size from the manifest alone, before anything is allocated for it; then again with
     * the dataset (the arbiter's own files, loaded once the rest fits) */
    char spec[VT_RECIPE_SPEC_MAX], am[128];
    vt_recipe_dataset_spec(&g->rcp, spec, sizeof spec);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && (vt_data_load(spec, data_root, &g->ds) || memcmp(g->ds.hash, dh, 32) != 0)) {
            vti_decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, 0, 0, "the arbiter does not have the run's dataset %s", spec);
            return -1;
        }
        uint64_t data = 0; /* what loading the dataset held at its peak (at least the dataset itself) */
        if (pass) {
            data = (uint64_t)g->ds.n * ((uint64_t)g->ds.d + 1);
            if (g->ds.load_bytes > data) data = g->ds.load_bytes;
        }
        if (vti_check_limits(g, pass, data)) return -1;
    }
    g->res->need_bytes = g->needs.bytes;
    vti_note(g, "the game needs at most %.1f MB; one step is %.3g flop, granted %.3f s at the rate floor%s",
             (double)g->needs.bytes / 1e6, g->needs.step_flop, (double)vti_work_ms(g, 1.0) / 1000.0,
             vti_arith_note(g, am, sizeof am));
    if (vt_model_init(&g->m, &g->rcp, g->ds.n, order)) {
        vti_decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, 0, 0, "the arbiter cannot build the model: %s", vt_errmsg());
        return -1;
    }
    g->have_model = 1;
    if (g->step_count != g->rcp.steps + 1) {
        vti_decide(g, VT_LOSER_TRAINER, VT_REASON_MANIFEST, 0, 0, "the commitment covers %llu steps, the recipe %llu",
                   (unsigned long long)g->step_count, (unsigned long long)g->rcp.steps + 1);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------- play */

/* The challenged step must have a committed state on which the parties disagree (a_hi: the auditor's
 * state hash of it), and both must agree on the initial state, or the arbiter settles it itself.
 * -1 after deciding. */
static int open_dispute(vti_game *g, const vt_msg_challenge *ch, uint8_t a_hi[32])
{
    const vt_recipe *rcp = &g->rcp;
    uint64_t hi = ch->claimed_step;
    if (hi < 1 || hi > rcp->steps || !expected_has_state(rcp, hi)) {
        vti_decide(g, VT_LOSER_AUDITOR, VT_REASON_BAD_CHALLENGE, hi, 0,
                   "the challenged step %llu has no committed state (steps 1..%llu, every %u)", (unsigned long long)hi,
                   (unsigned long long)rcp->steps, rcp->state_hash_every);
        return -1;
    }
    vti_note(g, "challenge: the auditor disputes the committed state of step %llu", (unsigned long long)hi);
    const vt_msg_leaf *Lh = vti_leaf(g, hi);
    if (!Lh) return -1;
    memcpy(a_hi, ch->auditor_state_hash, 32);
    if (memcmp(Lh->state_hash, a_hi, 32) == 0) {
        vti_decide(g, VT_LOSER_AUDITOR, VT_REASON_BAD_CHALLENGE, hi, 0, "the auditor's state hash of step %llu equals "
                   "the trainer's: there is no disagreement", (unsigned long long)hi);
        return -1;
    }
    /* step 0: both must agree on the initial state, or the arbiter settles it itself */
    const vt_msg_leaf *L0 = vti_leaf(g, 0);
    uint8_t a0[32];
    if (!L0 || auditor_state(g, 0, a0)) return -1;
    if (memcmp(L0->state_hash, a0, 32) != 0) {
        uint8_t r0[32];
        if (vt_model_state_hash(&g->m, r0)) {
            vti_decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, 0, 0, "cannot hash the initial state");
            return -1;
        }
        int t_ok = memcmp(r0, L0->state_hash, 32) == 0;
        vti_decide(g, t_ok ? VT_LOSER_AUDITOR : VT_LOSER_TRAINER, VT_REASON_WRONG_OUTPUT, 0, 0,
                   "the initial state recomputed by the arbiter %s the trainer's", t_ok ? "equals" : "differs from");
        return -1;
    }
    return 0;
}

/* Bisection over the committed states between *lo (agreed) and *hi (disputed; a_hi: the auditor's
 * state hash of it) down to two neighbouring committed states. -1 after deciding. */
static int bisect_steps(vti_game *g, uint64_t *lo_io, uint64_t *hi_io, uint8_t a_hi[32])
{
    const vt_recipe *rcp = &g->rcp;
    uint64_t lo = *lo_io, hi = *hi_io;
    while (1) {
        uint64_t cand[2], nc = 0; /* the committed step nearest the middle of (lo, hi) */
        uint64_t mid = lo + (hi - lo) / 2;
        for (uint64_t s = mid; s > lo && nc == 0; s--)
            if (expected_has_state(rcp, s)) cand[nc++] = s;
        for (uint64_t s = mid + 1; s < hi && nc < 2; s++)
            if (expected_has_state(rcp, s)) {
                cand[nc++] = s;
                break;
            }
        if (nc == 0) break;
        uint64_t s = cand[0];
        const vt_msg_leaf *L = vti_leaf(g, s);
        uint8_t a[32];
        if (!L || auditor_state(g, s, a)) return -1;
        g->res->step_rounds++;
        int agree = memcmp(L->state_hash, a, 32) == 0;
        vti_note(g, "step round %llu: state of step %llu: %s", (unsigned long long)g->res->step_rounds,
                 (unsigned long long)s, agree ? "agreed" : "disputed");
        if (agree)
            lo = s;
        else
            hi = s, memcpy(a_hi, a, 32);
    }
    *lo_io = lo;
    *hi_io = hi;
    return 0;
}

/* Bisection over the operation chain of the segment lo..hi (sh_lo, sh_hi: the trainer's committed
 * state hashes; a_hi: the auditor's of hi): *b, the first position the parties dispute, ct and ca
 * their claims there, agreed the chain both agree on before it. Each party's chain must end in its
 * state hash of hi and its claim at b extend the agreed chain. -1 after deciding. */
static int bisect_ops(vti_game *g, uint64_t lo, uint64_t hi, const uint8_t sh_lo[32], const uint8_t sh_hi[32],
                      const uint8_t a_hi[32], vti_claim *ct, vti_claim *ca, vti_claim *agreed, uint64_t *b_out)
{
    uint64_t P = (hi - lo) * g->m.n_ops, total = P + 1;
    vt_chain_start(lo, sh_lo, agreed->C);
    if (chain_claim(g, VT_ROLE_TRAINER, lo, hi, total, total, ct) || chain_claim(g, VT_ROLE_AUDITOR, lo, hi, total, total, ca))
        return -1;
    if (memcmp(ct->h, sh_hi, 32) != 0) {
        vti_decide(g, VT_LOSER_TRAINER, VT_REASON_INCONSISTENT, hi, 0,
                   "the trainer's chain ends in another state hash than it committed for step %llu",
                   (unsigned long long)hi);
        return -1;
    }
    if (memcmp(ca->h, a_hi, 32) != 0) {
        vti_decide(g, VT_LOSER_AUDITOR, VT_REASON_INCONSISTENT, hi, 0,
                   "the auditor's chain ends in another state hash than it claimed for step %llu", (unsigned long long)hi);
        return -1;
    }
    uint64_t a = 0, b = total;
    while (b - a > 1) {
        uint64_t mid = a + (b - a) / 2;
        vti_claim t, u;
        if (chain_claim(g, VT_ROLE_TRAINER, lo, hi, mid, total, &t) || chain_claim(g, VT_ROLE_AUDITOR, lo, hi, mid, total, &u))
            return -1;
        g->res->op_rounds++;
        if (memcmp(t.C, u.C, 32) == 0)
            a = mid, *agreed = t;
        else
            b = mid, *ct = t, *ca = u;
    }
    /* each party's claim at b must extend the agreed chain at a */
    uint8_t nt[32], na[32];
    vt_chain_next(agreed->C, ct->h, nt);
    vt_chain_next(agreed->C, ca->h, na);
    int bt = memcmp(nt, ct->C, 32) != 0, ba = memcmp(na, ca->C, 32) != 0;
    uint64_t s = hi;
    uint32_t j = 0;
    if (b < total) vt_seg_position(lo, g->m.n_ops, b, &s, &j);
    if (bt || ba) {
        vti_decide(g, bt && ba ? VT_LOSER_BOTH : bt ? VT_LOSER_TRAINER : VT_LOSER_AUDITOR, VT_REASON_INCONSISTENT, s, j,
                   "the %s's chain claims at positions %llu and %llu contradict each other",
                   bt && ba ? "trainer's and the auditor" : bt ? "trainer" : "auditor", (unsigned long long)a,
                   (unsigned long long)b);
        return -1;
    }
    *b_out = b;
    return 0;
}

/* The agreed prefix h_1..h_(b-1) of the segment lo..hi from the trainer, authenticated by the
 * agreed chain hash: *out, calloc'd, with (*out)[q] = h_q, q = 1..b-1. (s, j): the disputed
 * position, for the verdict. -1 after deciding. */
static int agreed_prefix(vti_game *g, uint64_t lo, uint64_t hi, uint64_t b, const uint8_t sh_lo[32],
                         const vti_claim *agreed, uint64_t s, uint32_t j, uint8_t (**out)[32])
{
    vt_msg pa;
    memset(&pa, 0, sizeof pa);
    vt_msg_q_chain pq = {lo, hi, b - 1};
    if (b > 1) {
        if (vti_hash_list(g, VT_MSG_Q_PREFIX, &pq, b - 1, &pa, s, j)) return -1;
        uint8_t c[32];
        vt_chain_start(lo, sh_lo, c);
        for (uint64_t q = 0; q < b - 1; q++) vt_chain_next(c, pa.body.hashes.h[q], c);
        if (memcmp(c, agreed->C, 32) != 0) {
            vt_msg_free(&pa);
            vti_decide(g, VT_LOSER_TRAINER, VT_REASON_INCONSISTENT, s, j,
                       "the trainer's output hashes do not chain to the hash both parties agreed on");
            return -1;
        }
    }
    uint8_t(*prefix)[32] = calloc(b, 32);
    if (!prefix) {
        vt_msg_free(&pa);
        vti_decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, s, j, "out of memory");
        return -1;
    }
    if (b > 1) memcpy(prefix[1], pa.body.hashes.h, (b - 1) * 32);
    vt_msg_free(&pa);
    *out = prefix;
    return 0;
}

/* The game: the checks of the challenge and of the trainer's service and manifest, the bisection
 * over the committed states, then over the operations of the disputed segment, then the judgement
 * of the state of step hi (every operation agrees) or of the one disputed operation. */
static void play(vti_game *g, const vt_msg_challenge *ch, const char *data_root, vt_order order)
{
    if (check_commitment(g, ch) || check_service(g, ch) || check_equivocation(g, ch) || load_manifest(g, data_root, order)) return;
    uint64_t hi = ch->claimed_step, lo = 0;
    uint8_t a_hi[32];
    if (open_dispute(g, ch, a_hi) || bisect_steps(g, &lo, &hi, a_hi)) return;
    const vt_msg_leaf *Llo = vti_leaf(g, lo);
    const vt_msg_leaf *Lhi = vti_leaf(g, hi);
    if (!Llo || !Lhi) return;
    uint8_t sh_lo[32], sh_hi[32];
    memcpy(sh_lo, Llo->state_hash, 32);
    memcpy(sh_hi, Lhi->state_hash, 32);
    vti_note(g, "disputed segment: steps %llu..%llu", (unsigned long long)lo + 1, (unsigned long long)hi);

    vti_claim ct, ca, agreed;
    uint64_t b, total = (hi - lo) * g->m.n_ops + 1;
    if (bisect_ops(g, lo, hi, sh_lo, sh_hi, a_hi, &ct, &ca, &agreed, &b)) return;
    uint64_t s = hi;
    uint32_t j = 0;
    if (b < total) vt_seg_position(lo, g->m.n_ops, b, &s, &j);
    uint8_t(*prefix)[32];
    if (agreed_prefix(g, lo, hi, b, sh_lo, &agreed, s, j, &prefix)) return;
    if (b == total) /* every operation agrees: the dispute is the state hash of step hi itself */
        vti_judge_state(g, lo, hi, (const uint8_t(*)[32])prefix, &ct, &ca, sh_lo);
    else
        vti_recompute(g, lo, b, &ct, &ca, (const uint8_t(*)[32])prefix, sh_lo);
    free(prefix);
}

void vt_game_play(const vt_game_io *io, const vt_msg_challenge *ch, const char *data_root, vt_order order,
                  const vt_game_limits *lim, vt_game_result *res)
{
    vti_game g;
    memset(&g, 0, sizeof g);
    memset(res, 0, sizeof *res);
    g.io = io;
    g.lim = lim;
    g.res = res;
    g.ch = ch;
    play(&g, ch, data_root, order);
    if (!g.done) vti_decide(&g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, 0, 0, "the game ended without a decision");
    free(g.leaves);
    free(g.leaf_steps);
    vt_data_free(&g.ds);
    if (g.have_model) vt_model_free(&g.m);
}

