/* vt_game.c - the arbiter's game engine. Read docs/dispute.md first. */
#include "vt_game.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_cli.h"
#include "../common/vt_env.h"
#include "../common/vt_hash.h"
#include "../data/vt_data.h"
#include "../merkle/vt_merkle.h"
#include "../merkle/vt_sign.h"
#include "../model/vt_model.h"
#include "../rounding/vt_round.h"
#include "../run/vt_train.h"
#include "vt_dispute.h"

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

typedef struct {
    const vt_game_io *io;
    const vt_game_limits *lim;
    vt_game_result *res;
    int done;
    const vt_msg_challenge *ch;  /* the verdict names it (vt_game_bind_verdict) */
    uint8_t trainer_nonce[32];   /* from the trainer's SERVICE answer */
    int have_tnonce;
    uint64_t record_serial;      /* of the auditor's service record */
    uint64_t record_expiry;      /* of the auditor's service record */
    int record_expired;          /* it had expired when the arbiter took the challenge */
    int asking_service;          /* the first question (Q_SERVICE) is under way */
    uint8_t cm_hash[32], root[32], trainer_pk[32], manifest_hash[32];
    uint64_t step_count;
    vt_recipe rc;
    vt_dataset ds;
    vt_model m;
    int have_model;
    vt_game_needs needs; /* from the manifest (load_manifest) */
    int have_needs;
    /* computations already credited to each party's clock (kind, a, b): one credit each */
    struct {
        int kind;
        uint64_t a, b;
    } credited[4][32];
    int n_credited[4];
    /* leaves already obtained (step -> leaf), a small cache */
    vt_msg_leaf *leaves;
    uint64_t *leaf_steps;
    size_t n_leaves, cap_leaves;
} game;

static void set_verdict(vt_msg_verdict *v, const uint8_t cm_hash[32], int loser, int reason, uint64_t step, uint32_t op,
                        const char *text);

static void decide(game *g, int loser, int reason, uint64_t step, uint32_t op, const char *fmt, ...)
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

/* decide, then leave the (void) function */
#define FAIL(...)              \
    do {                       \
        decide(__VA_ARGS__);   \
        return;                \
    } while (0)

static void note(game *g, const char *fmt, ...)
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

/* The time granted for recomputing `steps` steps at the rate floor (0 before the manifest is known). */
static int64_t work_ms(const game *g, double steps)
{
    if (!g->have_needs || steps <= 0) return 0;
    double rate = g->lim && g->lim->min_rate > 0 ? g->lim->min_rate : VT_GAME_MIN_RATE;
    double ms = steps * g->needs.step_flop / rate * 1000.0;
    return ms >= 1e12 ? (int64_t)1e12 : (int64_t)ms + 1;
}

/* What the step's flop says of the GEMMs' arithmetic, for messages ("" for fp64). */
static const char *arith_note(const game *g, char *buf, size_t cap)
{
    if (!g->rc.gemm_arith) return "";
    snprintf(buf, cap, " (its GEMMs' %.3g flop weighed %.3f for gemm_arith=%s)", g->needs.gemm_flop,
             g->needs.arith_factor, vt_gemm_arith_names[g->rc.gemm_arith]);
    return buf;
}

/* Steps a party recomputes to re-create the state of step s: from its checkpoint at or before s. */
static uint64_t restore_steps(const game *g, uint64_t s)
{
    return g->rc.checkpoint_every ? s % g->rc.checkpoint_every : s;
}

/* Bounds of a question whose answer needs `steps` recomputed steps, the computation named by
 * (kind, a, b): the deadline is extended by their time at every ask, the party's clock credited
 * with it once per computation (a cached answer costs nothing the second time). */
static vt_ask_bounds bounds(game *g, int party, uint64_t max_body, double steps, int kind, uint64_t a, uint64_t b)
{
    /* the auditor computed everything it is asked before it challenged (vt_challenge.c): no work
     * time, so a lying auditor holds a game for its clock at most */
    if (party == VT_ROLE_AUDITOR) steps = 0;
    vt_ask_bounds r = {max_body > UINT32_MAX ? UINT32_MAX : (uint32_t)max_body, work_ms(g, steps), 0};
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
static int ask(game *g, int party, int qtype, const void *q, int atype, const vt_ask_bounds *b, vt_msg *ans,
               uint64_t step, uint32_t op)
{
    static const vt_ask_bounds none = {0, 0, 0};
    memset(ans, 0, sizeof *ans);
    g->res->rounds++;
    vt_err e = g->io->ask(g->io->ctx, party, qtype, q, atype, b ? b : &none, ans);
    if (e == VT_ERR_INTERNAL) { /* the arbiter's own failure (e.g. no descriptor left): nobody loses */
        decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, step, op, "the arbiter could not ask the %s %s: %s",
               party_name(party), vt_msg_type_name(qtype), vt_errmsg());
        return -1;
    }
    int gone = e && party == VT_ROLE_AUDITOR && g->io->gone ? g->io->gone(g->io->ctx, party) : 0;
    if (gone) { /* its connection dropped and it did not come back, or it gave its slot away: nobody is at fault */
        decide(g, VT_LOSER_NONE, gone == VT_REASON_PREEMPTED ? VT_REASON_PREEMPTED : VT_REASON_AUDITOR_GONE, step, op,
               "%s: nobody is at fault", vt_errmsg());
        return -1;
    }
    if (e && party == VT_ROLE_TRAINER && g->asking_service && g->record_expired) {
        /* a trainer is bound to its address only until its record expires */
        decide(g, VT_LOSER_NONE, VT_REASON_EXPIRED_RECORD, step, op,
               "the trainer's service record expired at %llu (seconds since 1970; the challenge came at %llu) and the "
               "trainer gave no current record (%s): nobody is at fault",
               (unsigned long long)g->record_expiry, (unsigned long long)g->io->time, vt_errmsg());
        return -1;
    }
    if (e) {
        decide(g, party == VT_ROLE_TRAINER ? VT_LOSER_TRAINER : VT_LOSER_AUDITOR, VT_REASON_NO_ANSWER, step, op,
               "the %s gave no valid answer to %s: %s", party_name(party), vt_msg_type_name(qtype), vt_errmsg());
        return -1;
    }
    if (ans->hdr.type == VT_MSG_ERROR) {
        decide(g, party == VT_ROLE_TRAINER ? VT_LOSER_TRAINER : VT_LOSER_AUDITOR, VT_REASON_NO_ANSWER, step, op,
               "the %s refused to answer %s: %s", party_name(party), vt_msg_type_name(qtype),
               ans->body.error.message);
        vt_msg_free(ans);
        return -1;
    }
    return 0;
}

static int expected_has_state(const vt_recipe *rc, uint64_t s)
{
    return vt_recipe_has_state(rc, s);
}

/* The trainer's leaf of step s, checked against the signed root. NULL after deciding. */
static const vt_msg_leaf *leaf(game *g, uint64_t s)
{
    for (size_t i = 0; i < g->n_leaves; i++)
        if (g->leaf_steps[i] == s) return &g->leaves[i];
    vt_msg_q_step q = {s};
    vt_msg a;
    if (ask(g, VT_ROLE_TRAINER, VT_MSG_Q_LEAF, &q, VT_MSG_LEAF, NULL, &a, s, 0)) return NULL;
    vt_msg_leaf L = a.body.leaf;
    vt_msg_free(&a);
    uint8_t calc[32];
    if (L.step != s || L.tree_size != g->step_count || L.has_state != expected_has_state(&g->rc, s)) {
        decide(g, VT_LOSER_TRAINER, VT_REASON_BAD_PROOF, s, 0,
               "the trainer's leaf for step %llu names step %llu, tree size %llu or a state schedule that do not match "
               "its commitment",
               (unsigned long long)s, (unsigned long long)L.step, (unsigned long long)L.tree_size);
        return NULL;
    }
    if (vt_step_leaf(s, L.state_hash, L.has_state, L.log_hash, calc) || memcmp(calc, L.leaf, 32) != 0 ||
        vt_merkle_verify(L.leaf, s, L.tree_size, (const uint8_t(*)[32])L.path, L.n_path, g->root) != 0) {
        decide(g, VT_LOSER_TRAINER, VT_REASON_BAD_PROOF, s, 0,
               "the trainer's leaf for step %llu does not verify against its signed Merkle root", (unsigned long long)s);
        return NULL;
    }
    if (g->n_leaves == g->cap_leaves) {
        size_t nc = g->cap_leaves ? 2 * g->cap_leaves : 16;
        vt_msg_leaf *nl = realloc(g->leaves, nc * sizeof *nl);
        uint64_t *ns = nl ? realloc(g->leaf_steps, nc * sizeof *ns) : NULL;
        if (nl) g->leaves = nl;
        if (!nl || !ns) {
            decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, s, 0, "the arbiter ran out of memory");
            return NULL;
        }
        g->leaf_steps = ns;
        g->cap_leaves = nc;
    }
    g->leaves[g->n_leaves] = L;
    g->leaf_steps[g->n_leaves] = s;
    return &g->leaves[g->n_leaves++];
}

static int auditor_state(game *g, uint64_t s, uint8_t out[32])
{
    vt_msg_q_step q = {s};
    vt_msg a;
    if (ask(g, VT_ROLE_AUDITOR, VT_MSG_Q_STATE, &q, VT_MSG_STATE_CLAIM, NULL, &a, s, 0)) return -1;
    int bad = a.body.state_claim.step != s;
    memcpy(out, a.body.state_claim.state_hash, 32);
    vt_msg_free(&a);
    if (bad) decide(g, VT_LOSER_AUDITOR, VT_REASON_INCONSISTENT, s, 0, "the auditor answered for another step");
    return bad ? -1 : 0;
}

typedef struct {
    uint8_t C[32], h[32];
} claim;

static int chain_claim(game *g, int party, uint64_t lo, uint64_t hi, uint64_t pos, uint64_t total, claim *c)
{
    vt_msg_q_chain q = {lo, hi, pos};
    vt_msg a;
    uint64_t step = 0;
    uint32_t op = 0;
    if (pos < total) vt_seg_position(lo, g->m.n_ops, pos, &step, &op);
    /* the segment's chain: a restore to lo, then hi - lo steps */
    vt_ask_bounds b = bounds(g, party, 0, (double)(restore_steps(g, lo) + (hi - lo)), VT_MSG_Q_CHAIN, lo, hi);
    if (ask(g, party, VT_MSG_Q_CHAIN, &q, VT_MSG_CHAIN_CLAIM, &b, &a, step, op)) return -1;
    const vt_msg_chain_claim *cc = &a.body.chain_claim;
    int bad = cc->seg_from != lo || cc->seg_to != hi || cc->pos != pos || cc->total_positions != total;
    memcpy(c->C, cc->chain_hash, 32);
    memcpy(c->h, cc->output_hash, 32);
    vt_msg_free(&a);
    if (bad)
        decide(g, party == VT_ROLE_TRAINER ? VT_LOSER_TRAINER : VT_LOSER_AUDITOR, VT_REASON_INCONSISTENT, step, op,
               "the %s's chain claim does not answer the question (segment, position or %llu positions)",
               party_name(party), (unsigned long long)total);
    return bad ? -1 : 0;
}

/* The trainer's list of hashes (PREFIX or TENSORS), checked for its length. */
static int hash_list(game *g, int qtype, const void *q, uint64_t want_n, vt_msg *a, uint64_t step, uint32_t op)
{
    /* PREFIX: the segment's chain (a restore to lo, hi - lo steps); TENSORS: a restore to the step */
    vt_ask_bounds b;
    uint64_t body = vt_msg_min_body(VT_MSG_HASHES) + 32 * want_n;
    if (qtype == VT_MSG_Q_PREFIX) {
        const vt_msg_q_chain *qc = q;
        b = bounds(g, VT_ROLE_TRAINER, body, (double)(restore_steps(g, qc->seg_from) + (qc->seg_to - qc->seg_from)),
                   VT_MSG_Q_CHAIN, qc->seg_from, qc->seg_to);
    } else {
        const vt_msg_q_step *qs = q;
        b = bounds(g, VT_ROLE_TRAINER, body, (double)restore_steps(g, qs->step), VT_MSG_Q_TENSORS, qs->step, 0);
    }
    if (ask(g, VT_ROLE_TRAINER, qtype, q, VT_MSG_HASHES, &b, a, step, op)) return -1;
    if (a->body.hashes.n != want_n) {
        decide(g, VT_LOSER_TRAINER, VT_REASON_INCONSISTENT, step, op, "the trainer sent %u hashes, %llu were asked for",
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
static int check_record_times(game *g, const vt_service *sv)
{
    uint64_t now = g->io->time, at = vt_service_signed_at(sv);
    if (at > now + VT_CLOCK_SKEW_S) {
        decide(g, VT_LOSER_NONE, VT_REASON_CLOCK_SKEW, 0, 0,
               "the trainer's service record was signed at %llu (seconds since 1970), %llu s after this arbiter's time "
               "%llu: one of the two clocks is wrong (more than %d s apart); nobody is at fault",
               (unsigned long long)at, (unsigned long long)(at - now), (unsigned long long)now, VT_CLOCK_SKEW_S);
        return -1;
    }
    if (sv->expiry < at || sv->expiry - at < VT_RECORD_FLOOR_S) {
        decide(g, VT_LOSER_TRAINER, VT_REASON_SHORT_RECORD, 0, 0,
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
static int check_commitment(game *g, const vt_msg_challenge *ch)
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
static int check_service(game *g, const vt_msg_challenge *ch)
{
    vt_msg_q_service q;
    memcpy(q.commitment_hash, g->cm_hash, 32);
    memcpy(q.auditor_nonce, ch->nonce, 32);
    vt_msg a;
    g->asking_service = 1;
    int failed = ask(g, VT_ROLE_TRAINER, VT_MSG_Q_SERVICE, &q, VT_MSG_SERVICE, NULL, &a, 0, 0);
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
        decide(g, VT_LOSER_TRAINER, VT_REASON_NO_ANSWER, 0, 0,
               "the trainer's SERVICE does not answer this game's question (commitment hash or nonce)");
        return -1;
    }
    if (!parsed || memcmp(cur.trainer_pk, g->trainer_pk, 32) != 0) {
        decide(g, VT_LOSER_TRAINER, VT_REASON_NO_ANSWER, 0, 0, "the trainer's current service record %s",
               parsed ? "is signed by another key" : "is invalid");
        return -1;
    }
    uint64_t now = g->io->time;
    if (memcmp(cur.manifest_hash, g->manifest_hash, 32) == 0) { /* this run is served here */
        if (cur.expiry < now + VT_RECORD_FLOOR_S - VT_CLOCK_SKEW_S) {
            decide(g, VT_LOSER_TRAINER, VT_REASON_SHORT_RECORD, 0, 0,
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
        decide(g, VT_LOSER_TRAINER, VT_REASON_NO_ANSWER, 0, 0,
               "the trainer serves another run at %s, under an older record (serial %llu) than the one it signed for "
               "this run (serial %llu)", g->res->endpoint, (unsigned long long)cur.serial,
               (unsigned long long)g->record_serial);
        return -1;
    }
    if (g->record_expired) {
        decide(g, VT_LOSER_NONE, VT_REASON_STALE_RECORD, 0, 0,
               "not this run: the trainer's key at %s serves another run under a newer record (serial %llu), and its "
               "record of this run (serial %llu) expired at %llu, before the challenge came (%llu): nobody is at fault",
               g->res->endpoint, (unsigned long long)cur.serial, (unsigned long long)g->record_serial,
               (unsigned long long)g->record_expiry, (unsigned long long)now);
        return -1;
    }
    decide(g, VT_LOSER_TRAINER, VT_REASON_WITHDRAWN, 0, 0,
           "the trainer withdrew this run: its key at %s serves another run (record serial %llu) although its record of "
           "this run (serial %llu) is valid until %llu and the challenge came at %llu",
           g->res->endpoint, (unsigned long long)cur.serial, (unsigned long long)g->record_serial,
           (unsigned long long)g->record_expiry, (unsigned long long)now);
    return -1;
}

/* The commitment the trainer stands behind must be the one in the challenge: two different
 * valid signatures of the trainer's key over the same manifest are an equivocation. */
static int check_equivocation(game *g, const vt_msg_challenge *ch)
{
    vt_msg_q_step q = {0};
    vt_msg a;
    if (ask(g, VT_ROLE_TRAINER, VT_MSG_Q_COMMITMENT, &q, VT_MSG_COMMITMENT, NULL, &a, 0, 0)) return -1;
    int same = a.body.log.len == VT_MSG_COMMITMENT_LEN && memcmp(a.body.log.data, ch->commitment, 176) == 0;
    int valid = a.body.log.len == VT_MSG_COMMITMENT_LEN && memcmp(a.body.log.data, "VTCM", 4) == 0 &&
                memcmp(a.body.log.data + 8, g->manifest_hash, 32) == 0 &&
                memcmp(a.body.log.data + 80, g->trainer_pk, 32) == 0 &&
                vt_sign_verify_detached(a.body.log.data + VT_COMMITMENT_BODY_LEN, a.body.log.data,
                                        VT_COMMITMENT_BODY_LEN, g->trainer_pk) == 0;
    vt_msg_free(&a);
    if (same) return 0;
    if (valid)
        decide(g, VT_LOSER_TRAINER, VT_REASON_EQUIVOCATION, 0, 0,
               "the trainer stands behind another commitment than the auditor's, both signed by its key for the "
               "same manifest: it signed two different roots for one run");
    else
        decide(g, VT_LOSER_TRAINER, VT_REASON_INCONSISTENT, 0, 0,
               "the trainer does not stand behind the commitment it signed");
    return -1;
}

static int load_manifest(game *g, const char *data_root, vt_order order)
{
    vt_msg_q_step q = {0};
    vt_msg a;
    if (ask(g, VT_ROLE_TRAINER, VT_MSG_Q_MANIFEST, &q, VT_MSG_MANIFEST, NULL, &a, 0, 0)) return -1;
    uint8_t h[32], dh[32];
    vt_err e = vt_sha256(a.body.log.data, a.body.log.len, h);
    int match = !e && memcmp(h, g->manifest_hash, 32) == 0;
    if (match) e = vt_manifest_parse((const char *)a.body.log.data, a.body.log.len, &g->rc, dh);
    vt_msg_free(&a);
    if (!match || e) {
        decide(g, VT_LOSER_TRAINER, VT_REASON_MANIFEST, 0, 0, "the trainer's manifest %s",
               !match ? "does not match its commitment" : "cannot be parsed");
        return -1;
    }
    /* the game's size from the manifest alone, before anything is allocated for it; then again with
     * the dataset (the arbiter's own files, loaded once the rest fits) */
    char spec[VT_RECIPE_SPEC_MAX], am[128];
    vt_recipe_dataset_spec(&g->rc, spec, sizeof spec);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && (vt_data_load(spec, data_root, &g->ds) || memcmp(g->ds.hash, dh, 32) != 0)) {
            decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, 0, 0, "the arbiter does not have the run's dataset %s", spec);
            return -1;
        }
        uint64_t data = 0; /* what loading the dataset held at its peak (at least the dataset itself) */
        if (pass) {
            data = (uint64_t)g->ds.n * ((uint64_t)g->ds.d + 1);
            if (g->ds.load_bytes > data) data = g->ds.load_bytes;
        }
        vt_game_cost(&g->rc, data, g->lim, &g->needs);
        g->have_needs = 1;
        uint64_t need = g->needs.bytes, flop = g->needs.op_flop;
        if (g->lim && ((g->lim->max_game_bytes && need > g->lim->max_game_bytes) ||
                       (g->lim->max_op_flop && flop > g->lim->max_op_flop))) {
            decide(g, VT_LOSER_NONE, VT_REASON_OVER_LIMIT, 0, 0,
                   "the run's manifest needs %.1f MB%s and %.3g flop for its largest operation; this arbiter accepts at "
                   "most %.1f MB and %.3g flop per game: refused",
                   (double)need / 1e6, pass ? " with its dataset" : "", (double)flop,
                   (double)g->lim->max_game_bytes / 1e6, (double)g->lim->max_op_flop);
            return -1;
        }
        /* the agreed prefix of a segment travels in one HASHES answer */
        uint64_t seg = g->rc.state_hash_every ? g->rc.state_hash_every : 1;
        if (g->needs.n_ops && seg > (VT_MSG_HASHES_MAX - 1) / g->needs.n_ops) {
            decide(g, VT_LOSER_NONE, VT_REASON_OVER_LIMIT, 0, 0,
                   "the run's segments of %llu steps hold %llu positions, more than one HASHES answer carries (%u): "
                   "refused", (unsigned long long)seg, (unsigned long long)seg * g->needs.n_ops, VT_MSG_HASHES_MAX);
            return -1;
        }
        /* the most recomputation time a game may grant the trainer: a chain (a restore and a segment),
         * the tensors of two states and one operation's inputs: 4 x checkpoint_every + the segment */
        uint64_t K = g->rc.checkpoint_every ? g->rc.checkpoint_every : 1;
        int64_t worst = work_ms(g, 4.0 * (double)K + (double)seg);
        /* the limit is in FP64-equivalent work: a mode whose GEMMs weigh more is granted more time, and
         * is admitted on the same terms as the FP64 run of the recipe (docs/dispute.md "Clocks") */
        double fp64 = g->needs.step_flop - g->needs.gemm_flop * (g->needs.arith_factor - 1.0);
        double eq = g->needs.step_flop > 0 ? (double)worst * (fp64 / g->needs.step_flop) : (double)worst;
        if (g->lim && g->lim->max_work_ms && eq > (double)g->lim->max_work_ms) {
            decide(g, VT_LOSER_NONE, VT_REASON_OVER_LIMIT, 0, 0,
                   "the run's checkpoints every %llu steps and segments of %llu steps may grant the trainer %.0f s of "
                   "FP64-equivalent recomputation at the rate floor (%.0f s%s); this arbiter grants at most %.0f s per "
                   "game: refused",
                   (unsigned long long)K, (unsigned long long)seg, eq / 1000.0, (double)worst / 1000.0,
                   arith_note(g, am, sizeof am), (double)g->lim->max_work_ms / 1000.0);
            return -1;
        }
    }
    g->res->need_bytes = g->needs.bytes;
    note(g, "the game needs at most %.1f MB; one step is %.3g flop, granted %.3f s at the rate floor%s",
         (double)g->needs.bytes / 1e6, g->needs.step_flop, (double)work_ms(g, 1.0) / 1000.0,
         arith_note(g, am, sizeof am));
    if (vt_model_init(&g->m, &g->rc, g->ds.n, order)) {
        decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, 0, 0, "the arbiter cannot build the model: %s", vt_errmsg());
        return -1;
    }
    g->have_model = 1;
    if (g->step_count != g->rc.steps + 1) {
        decide(g, VT_LOSER_TRAINER, VT_REASON_MANIFEST, 0, 0, "the commitment covers %llu steps, the recipe %llu",
               (unsigned long long)g->step_count, (unsigned long long)g->rc.steps + 1);
        return -1;
    }
    return 0;
}

static double inputs_body(const vt_program *p, uint32_t j);

/* ---------------------------------------------------------------- recompute */

/* Loads the input tensors of operation (s, j) at position p from the trainer's INPUTS, each
 * authenticated by the hash both parties agreed on: a tensor from the state at lo by its tensor
 * hash (the trainer's tensor hashes of lo must give its committed state hash), a tensor an
 * earlier operation wrote by that operation's output hash over all of its outputs, which the
 * trainer must therefore send whole. */
static int load_inputs(game *g, uint64_t lo, uint64_t p, uint64_t s, uint32_t j, const uint8_t (*prefix)[32],
                       const uint8_t sh_lo[32])
{
    vt_model *m = &g->m;
    const vt_opdesc *o = &m->prog.op[j];
    uint8_t (*th)[32] = NULL;
    int need_tensors = 0;
    uint64_t *pos = calloc(o->n_in ? o->n_in : 1, sizeof *pos);
    if (!pos) {
        decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, s, j, "out of memory");
        return -1;
    }
    for (uint32_t k = 0; k < o->n_in; k++) {
        if (vt_input_producer(m, p, o->in[k], &pos[k])) {
            free(pos);
            decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, s, j, "%s", vt_errmsg());
            return -1;
        }
        need_tensors |= pos[k] == 0;
    }
    vt_msg ta;
    memset(&ta, 0, sizeof ta);
    if (need_tensors) {
        vt_msg_q_step q = {lo};
        if (hash_list(g, VT_MSG_Q_TENSORS, &q, m->n_tensors, &ta, s, j)) {
            free(pos);
            return -1;
        }
        th = ta.body.hashes.h;
        uint8_t calc[32];
        if (vt_state_hash_of(lo, m->n_tensors, (const uint8_t(*)[32])th, calc) || memcmp(calc, sh_lo, 32) != 0) {
            vt_msg_free(&ta);
            free(pos);
            decide(g, VT_LOSER_TRAINER, VT_REASON_INCONSISTENT, s, j,
                   "the trainer's tensor hashes of step %llu do not give its committed state hash", (unsigned long long)lo);
            return -1;
        }
    }
    vt_msg_q_inputs q = {s, j};
    vt_msg a;
    /* its inputs (inputs_body: what an honest trainer sends) after a restore to s - 1 and one step */
    vt_ask_bounds ib = bounds(g, VT_ROLE_TRAINER, (uint64_t)inputs_body(&m->prog, j), (double)(restore_steps(g, s - 1) + 1),
                              VT_MSG_Q_INPUTS, s, j);
    if (ask(g, VT_ROLE_TRAINER, VT_MSG_Q_INPUTS, &q, VT_MSG_INPUTS, &ib, &a, s, j)) {
        vt_msg_free(&ta);
        free(pos);
        return -1;
    }
    int rc = 0;
    const vt_msg_inputs *in = &a.body.inputs;
    for (uint32_t k = 0; k < o->n_in && !rc; k++) {
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
        for (uint32_t u = 0; u < n_ids && !rc; u++) {
            const vt_msg_tensor *t = NULL;
            for (uint16_t i = 0; i < in->n_tensors; i++)
                if (in->tensors[i].tensor_id == ids[u]) t = &in->tensors[i];
            if (!t || vt_model_tensor_load(m, ids[u], t->data, (size_t)t->rows * t->cols) ||
                vt_model_tensor_hash(m, ids[u], h[u])) {
                decide(g, VT_LOSER_TRAINER, VT_REASON_BAD_INPUT, s, j,
                       "the trainer's inputs lack tensor %u (%s) or do not fit it", ids[u],
                       ids[u] < m->prog.n_tensors ? m->prog.t[ids[u]].name : "?");
                rc = -1;
            }
        }
        if (rc) break;
        const uint8_t *expect = pos[k] ? prefix[pos[k]] : th[o->in[k]];
        if (vt_output_hash_of(n_ids, (const uint8_t(*)[32])h, got) || memcmp(got, expect, 32) != 0) {
            decide(g, VT_LOSER_TRAINER, VT_REASON_BAD_INPUT, s, j,
                   "the trainer's input %s does not match the hash both parties agreed on", m->prog.t[o->in[k]].name);
            rc = -1;
        }
    }
    vt_msg_free(&a);
    vt_msg_free(&ta);
    free(pos);
    return rc;
}

static void recompute(game *g, uint64_t lo, uint64_t p, const claim *ct, const claim *ca, const uint8_t (*prefix)[32],
                      const uint8_t sh_lo[32])
{
    vt_model *m = &g->m;
    uint64_t s;
    uint32_t j;
    vt_seg_position(lo, m->n_ops, p, &s, &j);
    const vt_opdesc *o = &m->prog.op[j];
    const int rounded = vt_model_op_rounded(m, j);
    snprintf(g->res->op_name, sizeof g->res->op_name, "%s", o->name);
    note(g, "disputed operation: step %llu, operation %u (%s)", (unsigned long long)s, j, o->name);
    if (load_inputs(g, lo, p, s, j, prefix, sh_lo)) return;
    vt_steplog mini;
    vt_steplog_init(&mini, s);
    vt_oplog *rec = NULL;
    if (rounded) {
        const vt_msg_leaf *L = leaf(g, s);
        if (!L) return;
        vt_msg_q_step q = {s};
        vt_msg a;
        vt_ask_bounds lb = {(uint32_t)(vt_msg_min_body(VT_MSG_LOG) + g->needs.log_body), 0, 0};
        if (ask(g, VT_ROLE_TRAINER, VT_MSG_Q_LOG, &q, VT_MSG_LOG, &lb, &a, s, j)) return;
        vt_steplog full;
        vt_steplog_init(&full, 0);
        uint8_t lh[32];
        /* decoded within what an honest log of one step can hold (a small zstd frame may inflate) */
        vt_log_limits ll = {g->needs.max_log_decoded + 64, 0, g->needs.max_log_entries + 1, 0};
        vt_err e = vt_steplog_decode_stored(a.body.log.data, a.body.log.len, s, &ll, &full, lh);
        vt_msg_free(&a);
        if (e || memcmp(lh, L->log_hash, 32) != 0 || full.step != s) {
            vt_steplog_free(&full);
            decide(g, VT_LOSER_TRAINER, VT_REASON_LOG_MISMATCH, s, j,
                   "the trainer's log of step %llu does not match its committed log hash", (unsigned long long)s);
            return;
        }
        const vt_oplog *fo = NULL;
        for (uint32_t i = 0; i < full.n_ops; i++)
            if (full.ops[i].op_id == j) fo = &full.ops[i];
        if (m->rc.bound.rounding == VT_ROUNDING_EXACT) {
            /* exact rounding writes no log: a committed log with any record is not the rule's */
            e = full.n_ops == 0 ? VT_OK : VT_ERR_MISMATCH;
        } else {
            e = fo ? vt_steplog_add_op(&mini, j, fo->n_elems, &rec) : VT_ERR_MISMATCH;
            for (uint64_t k = 0; !e && k < fo->n_entries; k++) e = vt_oplog_push(rec, fo->e[k]);
        }
        vt_steplog_free(&full);
        if (e) {
            vt_steplog_free(&mini);
            decide(g, VT_LOSER_TRAINER, VT_REASON_LOG_MISMATCH, s, j,
                   m->rc.bound.rounding == VT_ROUNDING_EXACT
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
    decide(g, jd.loser, jd.reason, s, j, "%s", jd.why);
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
    vt_rctx rc;
    vt_rctx_init(&rc, VT_RMODE_REPLAY, m->rc.bound);
    vt_err e = vt_rctx_begin_step(&rc, s, log);
    m->step = s - 1;
    if (!e) e = vt_model_exec_op(m, ds, &rc, s, j);
    if (vt_env_check() != VT_OK) e = VT_ERR_ENV; /* FTZ / rounding changed: no verdict from wrong bits */
    double t1 = vt_now();
    uint8_t hr[32];
    if (!e) e = vt_model_output_hash(m, j, hr);
    out->recompute_seconds = t1 - t0;
    out->hash_seconds = vt_now() - t1;
    vt_steplog_free(&none);
#define JUDGE(l, r, ...) (out->loser = (l), out->reason = (r), snprintf(out->why, sizeof out->why, __VA_ARGS__))
    if (e == VT_ERR_IMPLAUSIBLE) {
        JUDGE(VT_LOSER_TRAINER, rc.fault.has_entry ? VT_REASON_IMPLAUSIBLE : VT_REASON_MISSING_ENTRY, "%s (%s)",
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

/* ------------------------------------------------------------------- cost */

/* The INPUTS body an honest trainer sends for operation j: for each input, itself (state) or
 * every output of the operation that wrote it last (the game authenticates the producer's
 * outputs together); 12 bytes of header and 4 per element each (protocol/vt_msg.c). */
static double wire_bytes(const vt_program *p, uint32_t t) /* as vt_model_tensor_words: F64 as two words */
{
    return 12.0 + 4.0 * (double)p->t[t].n * (p->t[t].dtype == VT_DT_F64 ? 2.0 : 1.0);
}

static double inputs_body(const vt_program *p, uint32_t j)
{
    const vt_opdesc *o = &p->op[j];
    double total = vt_msg_min_body(VT_MSG_INPUTS);
    for (uint32_t k = 0; k < o->n_in; k++) {
        int prev;
        uint32_t q = vt_program_producer(p, j, o->in[k], &prev);
        if (!q) {
            total += wire_bytes(p, o->in[k]);
            continue;
        }
        for (uint32_t u = 0; u < p->op[q].n_out; u++) total += wire_bytes(p, p->op[q].out[u]);
    }
    return total;
}

void vt_game_cost(const vt_recipe *rc, uint64_t data_bytes, const vt_game_limits *lim, vt_game_needs *out)
{
    /* from the program the recipe builds (nothing of it allocated yet). The interpreter's arenas
     * are calloc'd, so only what the game writes becomes resident: the state (set at step 0), the
     * disputed operation's inputs and outputs, and its scratch. Doubles, so nothing overflows. */
    memset(out, 0, sizeof *out);
    out->bytes = out->op_flop = out->max_inputs_body = out->log_body = UINT64_MAX;
    out->step_flop = 1e300;
    vt_program p;
    if (vt_program_build(rc, &p) != VT_OK) return;
    double state = 0, scratch = 0, norms = 0, f = 0, sf = 0, inb = 0, opt = 0, logb = 4096, logd = 4096, loge = 0;
    /* the GEMMs of a tensor-core mode weigh their flop by the mode's factor (docs/dispute.md "Clocks") */
    double gf = 0, sn = 0, w = 1.0;
    if (rc->gemm_arith > 0 && rc->gemm_arith < VT_GAME_ARITH_MAX && lim && lim->arith_factor[rc->gemm_arith] > 0)
        w = lim->arith_factor[rc->gemm_arith];
    for (int c = 0; c <= VT_TC_INPUT; c++) state += (double)p.arena_bytes[c];
    for (uint32_t j = 1; j <= p.n_ops; j++) {
        vt_opcost c;
        memset(&c, 0, sizeof c);
        const vt_opkind *k = vt_opkind_get(p.op[j].kind);
        k->cost(&p, &p.op[j], &c);
        if (c.scratch > scratch) scratch = c.scratch;
        if (c.norms > norms) norms = c.norms;
        if (c.flop > f) f = c.flop;
        sf += c.flop;
        if (p.op[j].kind == VT_OPK_MATMUL || p.op[j].kind == VT_OPK_BMM) gf += c.flop; /* vt_tc_gemm in a tc-* mode */
        else sn += c.flop;
        double ib = inputs_body(&p, j), ob = 0;
        for (uint32_t u = 0; u < p.op[j].n_out; u++) ob += wire_bytes(&p, p.op[j].out[u]) - 12.0;
        if (ib > inb) inb = ib;
        if (ib + ob > opt) opt = ib + ob; /* its inputs loaded into the arenas, its outputs written */
        if (k->rounded && rc->bound.rounding != VT_ROUNDING_EXACT) {
            logb += 64.0 + 16.0 * ob / 4.0; /* its record header (<= 34 bytes), <= 16 per element */
            logd += 64.0 + 15.0 * ob / 4.0; /* decoded: index <= 10 bytes, 2 bits, value 4 bytes */
            loge += ob / 4.0;
        }
    }
    double gap = rc->state_hash_every ? (double)rc->state_hash_every : 1.0;
    if (gap > (double)rc->steps) gap = (double)rc->steps;
    double examples = rc->subset ? (double)rc->subset : 70000.0; /* the sampler's permutation, at most */
    double model = state + opt + 8.0 * 3.0 * scratch + 4.0 * scratch + 16.0 * norms + 4.0 * examples +
                   8.0 * (double)rc->batch;
    /* the largest answer, received (framed bytes) and decoded (its tensors), the agreed prefix hashes
     * (received and copied), the committed leaves and tensor hashes (small) */
    if (logb > (double)VT_MSG_LOG_MAX_DATA) logb = VT_MSG_LOG_MAX_DATA;
    double big = inb > logb ? inb : logb; /* INPUTS is freed before the LOG is asked */
    double msgs = 2.0 * big + 3.0 * 32.0 * (gap * p.n_ops + 2.0) + 64.0 * (double)p.n_tensors + (1 << 20);
    /* + the process's baseline (libraries, TLS, the program, transcript buffers): 16 MB */
    double total = model + msgs + (double)data_bytes + (16 << 20);
    out->bytes = total >= 1.8e19 ? UINT64_MAX : (uint64_t)total;
    out->op_flop = f >= 1.8e19 ? UINT64_MAX : (uint64_t)f;
    out->gemm_flop = gf;
    out->arith_factor = rc->gemm_arith ? w : 1.0;
    /* fp64: the sum as before the weights (the same bits); a tc-* mode: the other operations' flop
     * plus the GEMMs' weighed */
    out->step_flop = (rc->gemm_arith ? sn + out->arith_factor * gf : sf) + VT_GAME_OP_FLOP * (double)p.n_ops;
    out->n_ops = p.n_ops;
    out->max_log_decoded = logd >= 1.8e19 ? UINT64_MAX : (uint64_t)logd;
    out->max_log_entries = loge >= 1.8e19 ? UINT64_MAX : (uint64_t)loge;
    out->max_inputs_body = inb >= 1.8e19 ? UINT64_MAX : (uint64_t)inb;
    out->log_body = (uint64_t)logb;
    vt_program_free(&p);
}

/* ------------------------------------------------------------------- play */

static void play(game *g, const vt_msg_challenge *ch, const char *data_root, vt_order order)
{
    if (check_commitment(g, ch) || check_service(g, ch) || check_equivocation(g, ch) || load_manifest(g, data_root, order)) return;
    const vt_recipe *rc = &g->rc;
    uint64_t hi = ch->claimed_step, lo = 0;
    if (hi < 1 || hi > rc->steps || !expected_has_state(rc, hi)) {
        decide(g, VT_LOSER_AUDITOR, VT_REASON_BAD_CHALLENGE, hi, 0,
               "the challenged step %llu has no committed state (steps 1..%llu, every %u)", (unsigned long long)hi,
               (unsigned long long)rc->steps, rc->state_hash_every);
        return;
    }
    note(g, "challenge: the auditor disputes the committed state of step %llu", (unsigned long long)hi);
    const vt_msg_leaf *Lh = leaf(g, hi);
    if (!Lh) return;
    uint8_t a_hi[32];
    memcpy(a_hi, ch->auditor_state_hash, 32);
    if (memcmp(Lh->state_hash, a_hi, 32) == 0) {
        decide(g, VT_LOSER_AUDITOR, VT_REASON_BAD_CHALLENGE, hi, 0, "the auditor's state hash of step %llu equals the "
               "trainer's: there is no disagreement", (unsigned long long)hi);
        return;
    }
    /* step 0: both must agree on the initial state, or the arbiter settles it itself */
    const vt_msg_leaf *L0 = leaf(g, 0);
    uint8_t a0[32];
    if (!L0 || auditor_state(g, 0, a0)) return;
    if (memcmp(L0->state_hash, a0, 32) != 0) {
        uint8_t r0[32];
        if (vt_model_state_hash(&g->m, r0)) FAIL(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, 0, 0, "cannot hash the initial state");
        int t_ok = memcmp(r0, L0->state_hash, 32) == 0;
        decide(g, t_ok ? VT_LOSER_AUDITOR : VT_LOSER_TRAINER, VT_REASON_WRONG_OUTPUT, 0, 0,
               "the initial state recomputed by the arbiter %s the trainer's", t_ok ? "equals" : "differs from");
        return;
    }
    /* bisection over the committed states */
    while (1) {
        uint64_t cand[2], nc = 0; /* the committed step nearest the middle of (lo, hi) */
        uint64_t mid = lo + (hi - lo) / 2;
        for (uint64_t s = mid; s > lo && nc == 0; s--)
            if (expected_has_state(rc, s)) cand[nc++] = s;
        for (uint64_t s = mid + 1; s < hi && nc < 2; s++)
            if (expected_has_state(rc, s)) {
                cand[nc++] = s;
                break;
            }
        if (nc == 0) break;
        uint64_t s = cand[0];
        const vt_msg_leaf *L = leaf(g, s);
        uint8_t a[32];
        if (!L || auditor_state(g, s, a)) return;
        g->res->step_rounds++;
        int agree = memcmp(L->state_hash, a, 32) == 0;
        note(g, "step round %llu: state of step %llu: %s", (unsigned long long)g->res->step_rounds,
             (unsigned long long)s, agree ? "agreed" : "disputed");
        if (agree)
            lo = s;
        else
            hi = s, memcpy(a_hi, a, 32);
    }
    const vt_msg_leaf *Llo = leaf(g, lo);
    const vt_msg_leaf *Lhi = leaf(g, hi);
    if (!Llo || !Lhi) return;
    uint8_t sh_lo[32], sh_hi[32];
    memcpy(sh_lo, Llo->state_hash, 32);
    memcpy(sh_hi, Lhi->state_hash, 32);
    note(g, "disputed segment: steps %llu..%llu", (unsigned long long)lo + 1, (unsigned long long)hi);

    /* bisection over the operation chain of the segment */
    uint64_t P = (hi - lo) * g->m.n_ops, total = P + 1;
    claim ct, ca, agreed;
    vt_chain_start(lo, sh_lo, agreed.C);
    if (chain_claim(g, VT_ROLE_TRAINER, lo, hi, total, total, &ct) || chain_claim(g, VT_ROLE_AUDITOR, lo, hi, total, total, &ca))
        return;
    if (memcmp(ct.h, sh_hi, 32) != 0)
        FAIL(g, VT_LOSER_TRAINER, VT_REASON_INCONSISTENT, hi, 0,
                      "the trainer's chain ends in another state hash than it committed for step %llu",
                      (unsigned long long)hi);
    if (memcmp(ca.h, a_hi, 32) != 0)
        FAIL(g, VT_LOSER_AUDITOR, VT_REASON_INCONSISTENT, hi, 0,
                      "the auditor's chain ends in another state hash than it claimed for step %llu", (unsigned long long)hi);
    uint64_t a = 0, b = total;
    while (b - a > 1) {
        uint64_t mid = a + (b - a) / 2;
        claim t, u;
        if (chain_claim(g, VT_ROLE_TRAINER, lo, hi, mid, total, &t) || chain_claim(g, VT_ROLE_AUDITOR, lo, hi, mid, total, &u))
            return;
        g->res->op_rounds++;
        if (memcmp(t.C, u.C, 32) == 0)
            a = mid, agreed = t;
        else
            b = mid, ct = t, ca = u;
    }
    /* each party's claim at b must extend the agreed chain at a */
    uint8_t nt[32], na[32];
    vt_chain_next(agreed.C, ct.h, nt);
    vt_chain_next(agreed.C, ca.h, na);
    int bt = memcmp(nt, ct.C, 32) != 0, ba = memcmp(na, ca.C, 32) != 0;
    uint64_t s = hi;
    uint32_t j = 0;
    if (b < total) vt_seg_position(lo, g->m.n_ops, b, &s, &j);
    if (bt || ba)
        FAIL(g, bt && ba ? VT_LOSER_BOTH : bt ? VT_LOSER_TRAINER : VT_LOSER_AUDITOR, VT_REASON_INCONSISTENT, s, j,
                      "the %s's chain claims at positions %llu and %llu contradict each other",
                      bt && ba ? "trainer's and the auditor" : bt ? "trainer" : "auditor", (unsigned long long)a,
                      (unsigned long long)b);
    /* the agreed prefix h_1..h_(b-1), authenticated by the agreed chain hash */
    vt_msg pa;
    memset(&pa, 0, sizeof pa);
    vt_msg_q_chain pq = {lo, hi, b - 1};
    if (b > 1) {
        if (hash_list(g, VT_MSG_Q_PREFIX, &pq, b - 1, &pa, s, j)) return;
        uint8_t c[32];
        vt_chain_start(lo, sh_lo, c);
        for (uint64_t q = 0; q < b - 1; q++) vt_chain_next(c, pa.body.hashes.h[q], c);
        if (memcmp(c, agreed.C, 32) != 0) {
            vt_msg_free(&pa);
            FAIL(g, VT_LOSER_TRAINER, VT_REASON_INCONSISTENT, s, j,
                          "the trainer's output hashes do not chain to the hash both parties agreed on");
        }
    }
    /* prefix[q] = h_q, q = 1..b-1 */
    uint8_t(*prefix)[32] = calloc(b, 32);
    if (!prefix) {
        vt_msg_free(&pa);
        FAIL(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, s, j, "out of memory");
    }
    if (b > 1) memcpy(prefix[1], pa.body.hashes.h, (b - 1) * 32);
    vt_msg_free(&pa);
    if (b == total) { /* every operation agrees: the dispute is the state hash of step hi itself */
        /* each state tensor's hash is its last writer's agreed output hash; where that writer has
         * several outputs, the trainer's tensor hashes of hi must combine to it */
        vt_model *m = &g->m;
        uint8_t(*th)[32] = calloc(m->n_tensors + 1, 32), r[32];
        int ok = th != NULL, multi = 0, from_lo = 0;
        vt_msg tt;
        memset(&tt, 0, sizeof tt);
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
        if (ok && from_lo) { /* the trainer's tensor hashes of lo, which must give the agreed state hash of lo */
            vt_msg tl;
            vt_msg_q_step ql = {lo};
            uint8_t c[32];
            if (hash_list(g, VT_MSG_Q_TENSORS, &ql, m->n_tensors, &tl, hi, 0)) {
                free(prefix);
                free(th);
                return;
            }
            if (vt_state_hash_of(lo, m->n_tensors, (const uint8_t(*)[32])tl.body.hashes.h, c) || memcmp(c, sh_lo, 32) != 0) {
                vt_msg_free(&tl);
                free(prefix);
                free(th);
                FAIL(g, VT_LOSER_TRAINER, VT_REASON_INCONSISTENT, hi, 0,
                     "the trainer's tensor hashes of step %llu do not give its committed state hash", (unsigned long long)lo);
            }
            for (uint32_t t = 0; t < m->n_tensors; t++) {
                uint64_t q = 1;
                if (vt_input_producer(m, total, t, &q) == VT_OK && q == 0) memcpy(th[t], tl.body.hashes.h[t], 32);
            }
            vt_msg_free(&tl);
        }
        if (ok && multi) {
            vt_msg_q_step qh = {hi};
            if (hash_list(g, VT_MSG_Q_TENSORS, &qh, m->n_tensors, &tt, hi, 0)) {
                free(prefix);
                free(th);
                return;
            }
            for (uint32_t t = 0; t < m->n_tensors && ok; t++) {
                uint64_t q = 0, qs;
                uint32_t qj;
                ok = vt_input_producer(m, total, t, &q) == VT_OK;
                if (!ok) break;
                if (q == 0) continue; /* from lo, above */
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
                    free(prefix);
                    free(th);
                    FAIL(g, VT_LOSER_TRAINER, VT_REASON_INCONSISTENT, hi, qj,
                         "the trainer's tensor hashes of step %llu do not give the agreed output of %s",
                         (unsigned long long)hi, w->name);
                }
                memcpy(th[t], tt.body.hashes.h[t], 32);
            }
            vt_msg_free(&tt);
        }
        int bad = !ok || vt_state_hash_of(hi, g->m.n_tensors, (const uint8_t(*)[32])th, r);
        free(th);
        if (bad)
            decide(g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, hi, 0, "cannot derive the state of step %llu",
                   (unsigned long long)hi);
        else if (memcmp(r, ct.h, 32) == 0)
            decide(g, VT_LOSER_AUDITOR, VT_REASON_WRONG_OUTPUT, hi, 0,
                   "every operation agrees and the trainer's committed state hash of step %llu is the hash of their "
                   "outputs", (unsigned long long)hi);
        else
            decide(g, memcmp(r, ca.h, 32) == 0 ? VT_LOSER_TRAINER : VT_LOSER_BOTH, VT_REASON_WRONG_OUTPUT, hi, 0,
                   "every operation agrees but the trainer's committed state hash of step %llu is not the hash of "
                   "their outputs", (unsigned long long)hi);
    } else {
        recompute(g, lo, b, &ct, &ca, (const uint8_t(*)[32])prefix, sh_lo);
    }
    free(prefix);
}

void vt_game_play(const vt_game_io *io, const vt_msg_challenge *ch, const char *data_root, vt_order order,
                  const vt_game_limits *lim, vt_game_result *res)
{
    game g;
    memset(&g, 0, sizeof g);
    memset(res, 0, sizeof *res);
    g.io = io;
    g.lim = lim;
    g.res = res;
    g.ch = ch;
    play(&g, ch, data_root, order);
    if (!g.done) decide(&g, VT_LOSER_NONE, VT_REASON_CANNOT_JUDGE, 0, 0, "the game ended without a decision");
    if (getenv("VT_ARBITER_BENCH") && g.have_model) { /* the yardstick: one whole verifiable step (median of 5) */
        vt_model sm;
        if (vt_model_init(&sm, &g.rc, g.ds.n, VT_ORDER_BLAS) == VT_OK) { /* a trainer's step (its default order) */
            double t[7];
            vt_steplog log;
            vt_steplog_init(&log, 0);
            int ok = 1;
            for (int i = 0; i < 7 && ok; i++) {
                vt_rctx rc;
                vt_rctx_init(&rc, VT_RMODE_RECORD, g.rc.bound);
                float loss;
                double t0 = vt_now();
                ok = vt_rctx_begin_step(&rc, sm.step + 1, &log) == VT_OK && vt_model_step(&sm, &g.ds, &rc, &loss) == VT_OK;
                t[i] = vt_now() - t0;
            }
            for (int i = 2; i < 7; i++) /* insertion sort of the 5 timed after 2 warm-up steps */
                for (int k = i; k > 2 && t[k] < t[k - 1]; k--) {
                    double x = t[k];
                    t[k] = t[k - 1], t[k - 1] = x;
                }
            if (ok) res->step_seconds = t[4];
            vt_steplog_free(&log);
            vt_model_free(&sm);
        }
    }
    free(g.leaves);
    free(g.leaf_steps);
    vt_data_free(&g.ds);
    if (g.have_model) vt_model_free(&g.m);
}
