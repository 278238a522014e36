/* vt_challenge.c - the auditor's side of the dispute game (docs/dispute.md). The auditor
 * computes its own version of the run (a lenient replay of the trainer's logs with its own
 * evaluation order), challenges the first committed state it disagrees with, and answers
 * the arbiter's questions until the verdict. */
#include "vt_challenge.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vt_dispute.h"
#include "vt_game.h"
#include "../common/vt_cli.h"
#include "../common/vt_hash.h"
#include "../data/vt_data.h"
#include "../merkle/vt_sign.h"
#include "../protocol/vt_proto.h"
#include "../store/vt_store.h"
#include "../run/vt_init.h"
#include "../run/vt_train.h"

typedef struct {
    const vt_challenge_opts *o;
    vt_keypair kp;
    vt_store *st;
    vt_recipe rcp;
    vt_dataset ds;
    uint8_t (*state)[32]; /* own state hash per committed step (index = step) */
    uint8_t *have;
    vt_seg_chain chain;
    int have_chain;
    vt_st_file init; /* a run started from a file (--init): its initial state */
} auditor;

static int has_state(const vt_recipe *rcp, uint64_t s)
{
    return vt_recipe_has_state(rcp, s);
}

/* Every model of the auditor's answers carries the hooks (a lying auditor in tests stays
 * consistent in every answer). */
static vt_err new_model(auditor *a, vt_model *m)
{
    VT_FORWARD_IF_ERROR(vt_model_init(m, &a->rcp, a->ds.n, a->o->order));
    if (a->rcp.has_init) { /* step 0 is the file's state, not the recipe's */
        vt_err e = vt_init_apply(m, &a->init);
        if (e) {
            vt_model_free(m);
            return e;
        }
    }
    vt_model_set_hooks(m, a->o->hooks);
    return VT_OK;
}

/* Own replay of the whole run up to `upto`, recording own state hashes at committed steps;
 * also compares with the trainer's leaves to find the first disagreement (returned in *bad). */
static vt_err own_states(auditor *a, uint64_t upto, uint64_t *bad)
{
    vt_model m;
    VT_FORWARD_IF_ERROR(new_model(a, &m));
    vt_err e = vt_model_state_hash(&m, a->state[0]);
    a->have[0] = 1;
    *bad = 0;
    int tainted = 0; /* a missing/implausible entry or unusable log was met: our states are marked */
    for (uint64_t s = 1; !e && s <= upto; s++) {
        int disputed = 0;
        e = vt_step_once(&m, a->st, &a->ds, VT_PARTY_AUDITOR, &disputed);
        tainted |= disputed;
        if (e || !has_state(&a->rcp, s)) continue;
        e = vt_model_state_hash(&m, a->state[s]);
        if (tainted) vt_dispute_mark(a->state[s]);
        a->have[s] = 1;
        vt_step_rec r;
        if (!e) e = vt_store_get_step(a->st, s, &r);
        if (!e && !*bad && memcmp(r.state_hash, a->state[s], 32) != 0) {
            *bad = s;
            if (!a->o->step) break;
        }
    }
    vt_model_free(&m);
    return e;
}

static vt_err get_chain(auditor *a, uint64_t lo, uint64_t hi)
{
    if (a->have_chain && a->chain.lo == lo && a->chain.hi == hi) return VT_OK;
    if (a->have_chain) vt_seg_chain_free(&a->chain);
    a->have_chain = 0;
    VT_RETURN_ERROR_IF(lo >= hi || hi > a->rcp.steps, VT_ERR_ARG, "no segment");
    vt_model m;
    VT_FORWARD_IF_ERROR(new_model(a, &m));
    vt_err e = vt_restore(&m, a->st, &a->ds, VT_PARTY_AUDITOR, lo);
    if (!e) e = vt_seg_chain_compute(&m, a->st, &a->ds, VT_PARTY_AUDITOR, hi, &a->chain);
    vt_model_free(&m);
    if (e) return e;
    a->have_chain = 1;
    return VT_OK;
}

static vt_err answer(auditor *a, vt_conn *c, const vt_msg *q)
{
    switch (q->hdr.type) {
    case VT_MSG_Q_STATE: {
        uint64_t s = q->body.q_state.step;
        VT_RETURN_ERROR_IF(s > a->rcp.steps || !a->have[s], VT_ERR_ARG, "no own state for step %llu", (unsigned long long)s);
        vt_msg_state_claim r = {s, {0}};
        memcpy(r.state_hash, a->state[s], 32);
        return vt_send_msg(c, VT_MSG_STATE_CLAIM, &r, &a->kp);
    }
    case VT_MSG_Q_CHAIN: {
        const vt_msg_q_chain *qc = &q->body.q_chain;
        VT_FORWARD_IF_ERROR(get_chain(a, qc->seg_from, qc->seg_to));
        VT_RETURN_ERROR_IF(qc->pos < 1 || qc->pos > a->chain.P + 1, VT_ERR_ARG, "no such position");
        vt_msg_chain_claim r;
        r.seg_from = qc->seg_from, r.seg_to = qc->seg_to, r.pos = qc->pos, r.total_positions = a->chain.P + 1;
        memcpy(r.chain_hash, a->chain.C[qc->pos], 32);
        memcpy(r.output_hash, a->chain.h[qc->pos], 32);
        return vt_send_msg(c, VT_MSG_CHAIN_CLAIM, &r, &a->kp);
    }
    case VT_MSG_Q_HINT: { /* the first element of (s, j) whose log entry was missing for us */
        uint64_t s = q->body.q_inputs.step;
        uint32_t j = q->body.q_inputs.op;
        vt_model m;
        VT_FORWARD_IF_ERROR(new_model(a, &m));
        vt_fault f;
        memset(&f, 0, sizeof f);
        vt_err e = s >= 1 && s <= a->rcp.steps ? vt_restore(&m, a->st, &a->ds, VT_PARTY_AUDITOR, s - 1) : VT_ERR_ARG;
        if (!e) e = vt_run_to_op(&m, a->st, &a->ds, VT_PARTY_AUDITOR, j, 1, &f);
        vt_model_free(&m);
        VT_FORWARD_IF_ERROR(e);
        vt_msg_hint r = {s, j, 0, 0};
        if (f.code == VT_ERR_IMPLAUSIBLE && !f.has_entry && f.op_id == j) r.has = 1, r.index = f.index;
        return vt_send_msg(c, VT_MSG_HINT, &r, &a->kp);
    }
    case VT_MSG_Q_OUTPUT: { /* our own output of (s, j) */
        uint64_t s = q->body.q_inputs.step;
        uint32_t j = q->body.q_inputs.op;
        vt_model m;
        VT_FORWARD_IF_ERROR(new_model(a, &m));
        vt_err e = s >= 1 && s <= a->rcp.steps && j >= 1 && j <= m.n_ops
                       ? vt_restore(&m, a->st, &a->ds, VT_PARTY_AUDITOR, s - 1)
                       : vt_set_error(VT_ERR_ARG, "no such operation");
        if (!e) e = vt_run_to_op(&m, a->st, &a->ds, VT_PARTY_AUDITOR, j, 1, NULL);
        vt_msg_tensor t[VT_MAX_OP_OUTPUTS];
        uint32_t nt = 0;
        if (!e) e = vt_model_wire_tensors(&m, m.prog.op[j].out, m.prog.op[j].n_out, t, VT_MAX_OP_OUTPUTS, &nt);
        if (!e) {
            vt_msg_inputs r = {s, j, (uint16_t)nt, t};
            e = vt_send_msg(c, VT_MSG_INPUTS, &r, &a->kp);
        }
        vt_wire_tensors_free(t, nt);
        vt_model_free(&m);
        return e;
    }
    default: VT_RETURN_ERROR(VT_ERR_FORMAT, "unexpected %s from the arbiter", vt_msg_type_name(q->hdr.type));
    }
}

/* Asks the trainer at its signed address for its current service record (Q_SERVICE, answered to any
 * key) and puts it in the challenge when it is this run's and newer than the one at hand. A trainer
 * that cannot be reached, or serves another run there, is said so: the challenge goes with the record
 * at hand, and the arbiter decides (docs/dispute.md "Fresh service records"). */
static void fetch_record(auditor *a, const vt_service *rec, const uint8_t commitment[176], vt_msg_challenge *ch)
{
    const vt_challenge_opts *o = a->o;
    vt_conn *c = NULL;
    vt_msg_q_service q;
    vt_commitment_bytes_hash(commitment, q.commitment_hash);
    vt_msg ans;
    memset(&ans, 0, sizeof ans);
    int have = 0;
    int dl = o->deadline_ms > 0 ? o->deadline_ms : 30000;
    vt_err e = vt_proto_nonce(q.auditor_nonce);
    if (!e) e = vt_connect(rec->addr, &a->kp, rec->trainer_pk, dl, &c, NULL);
    if (!e) e = vt_send_msg(c, VT_MSG_Q_SERVICE, &q, &a->kp);
    if (!e) e = vt_recv_msg(c, VT_MSG_SERVICE, dl, NULL, &ans);
    if (!e) have = 1;
    vt_conn_close(c);
    if (!e && ans.hdr.type == VT_MSG_ERROR) e = vt_set_error(VT_ERR_IO, "ERROR %u: %s", ans.body.error.code, ans.body.error.message);
    vt_service cur;
    const vt_msg_service *r = &ans.body.service;
    if (!e && (memcmp(r->commitment_hash, q.commitment_hash, 32) != 0 || memcmp(r->auditor_nonce, q.auditor_nonce, 32) != 0))
        e = vt_set_error(VT_ERR_FORMAT, "its SERVICE does not answer the question");
    if (!e) e = vt_service_parse(r->record, r->record_len, &cur);
    if (!e && memcmp(cur.trainer_pk, rec->trainer_pk, 32) != 0) e = vt_set_error(VT_ERR_CRYPTO, "signed by another key");
    if (e) {
        if (!o->quiet)
            fprintf(stderr, "auditor: cannot get the trainer's current record from %s (%s); challenging with the "
                    "record at hand (serial %llu, expires %llu)\n", rec->addr, vt_errmsg(), (unsigned long long)rec->serial,
                    (unsigned long long)rec->expiry);
    } else if (memcmp(cur.manifest_hash, rec->manifest_hash, 32) != 0) {
        if (!o->quiet)
            fprintf(stderr, "auditor: the trainer serves another run at %s (record serial %llu): it withdrew this run's "
                    "record (serial %llu, valid until %llu); challenging with that record\n", rec->addr,
                    (unsigned long long)cur.serial, (unsigned long long)rec->serial, (unsigned long long)rec->expiry);
    } else if (cur.serial > rec->serial && r->record_len <= sizeof ch->service) {
        memcpy(ch->service, r->record, r->record_len);
        ch->service_len = r->record_len;
        if (!o->quiet)
            fprintf(stderr, "auditor: the trainer's current record (serial %llu, expires %llu) goes with the challenge\n",
                    (unsigned long long)cur.serial, (unsigned long long)cur.expiry);
    }
    if (have) vt_msg_free(&ans);
}

/* How long to wait for the arbiter's next message: it may be waiting for the trainer far longer than
 * one deadline (the recomputation time it granted), but then it sends a heartbeat NOTE every
 * VT_ARBITER_HEARTBEAT_MS; silence this long means it is gone. */
static int msg_wait_ms(const vt_challenge_opts *o)
{
    int64_t w = (int64_t)(o->deadline_ms > 0 ? o->deadline_ms : 0) * 10 + 600000;
    return w > INT32_MAX ? INT32_MAX : (int)w;
}

/* Connects to the arbiter and sends the CHALLENGE (the same bytes every time: a resumption), until
 * its first message: a busy arbiter is waited for up to --wait-ms, anything else retried up to
 * window_ms (pauses 200 ms to 2 s). 0 with *c and *first. */
static vt_err dial(auditor *a, vt_msg_challenge *ch, const uint8_t *pin, const vt_service *rec, int window_ms,
                   vt_conn **c, vt_msg *first)
{
    const vt_challenge_opts *o = a->o;
    double t0 = vt_now();
    vt_err e = VT_OK;
    *c = NULL;
    for (int pause = 200;; pause = pause * 2 > 2000 ? 2000 : pause * 2) {
        int left = o->deadline_ms;
        e = vt_connect(o->arbiter_addr, &a->kp, pin, left > 0 ? left : 1, c, NULL);
        if (!e) { /* the challenge names the arbiter it is made before (the pinned key, or unpinned, the peer's) */
            memcpy(ch->arbiter_pk, vt_conn_peer_pk(*c), 32);
            if (!pin && rec && !vt_service_names_arbiter(rec, ch->arbiter_pk)) {
                char fpr[VT_SIGN_FPR_HEX_LEN + 1];
                if (vt_sign_fingerprint(ch->arbiter_pk, fpr)) snprintf(fpr, sizeof fpr, "?");
                vt_conn_close(*c);
                *c = NULL;
                return vt_set_error(VT_ERR_CRYPTO, "the arbiter at %s has key %s, which the trainer's service record does "
                                    "not name: not an arbiter the trainer accepts (no challenge sent)", o->arbiter_addr, fpr);
            }
        }
        if (!e) e = vt_send_msg(*c, VT_MSG_CHALLENGE, ch, &a->kp);
        if (!e) e = vt_recv_msg(*c, VT_MSG_ANY, msg_wait_ms(o), NULL, first);
        int busy = !e && first->hdr.type == VT_MSG_ERROR && first->body.error.code == VT_ERRC_BUSY;
        if (!e && !busy) return VT_OK;
        char why[600];
        snprintf(why, sizeof why, "%.590s", busy ? first->body.error.message : vt_errmsg());
        if (busy) vt_msg_free(first);
        vt_conn_close(*c);
        *c = NULL;
        /* a busy arbiter (its limits, docs/dispute.md) is waited for up to --wait-ms; anything else up to the window */
        double window = (busy && o->wait_ms > window_ms ? o->wait_ms : window_ms) / 1000.0;
        if (e == VT_ERR_CRYPTO || vt_now() - t0 + pause / 1000.0 >= window) {
            if (busy) e = vt_set_error(VT_ERR_IO, "the arbiter refused: %s", why);
            return e;
        }
        if (!o->quiet) fprintf(stderr, "auditor: the arbiter did not take the challenge (%s); retrying\n", why);
        struct timespec ts = {pause / 1000, (long)(pause % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* The connection to the arbiter dropped during the game: dial again with the same CHALLENGE, which
 * resumes the game (the arbiter asks its question again) or brings its verdict, for as long as
 * msg_wait_ms since the drop. */
static vt_err resume_game(auditor *a, vt_msg_challenge *ch, const uint8_t *pin, const vt_service *rec, vt_transcript *tr,
                          vt_conn **c, vt_msg *first, double *lost_at)
{
    const vt_challenge_opts *o = a->o;
    char why[600];
    snprintf(why, sizeof why, "%.590s", vt_errmsg());
    if (*lost_at == 0) *lost_at = vt_now();
    int left = msg_wait_ms(o) - (int)((vt_now() - *lost_at) * 1000.0);
    vt_conn_close(*c);
    *c = NULL;
    VT_RETURN_ERROR_IF(left <= 0, VT_ERR_IO, "the connection to the arbiter dropped (%s) and the game could not be resumed "
                       "within %d ms", why, msg_wait_ms(o));
    if (!o->quiet) fprintf(stderr, "auditor: the connection to the arbiter dropped (%s); resuming the game\n", why);
    VT_FORWARD_IF_ERROR(dial(a, ch, pin, rec, left, c, first));
    if (tr) {
        VT_FORWARD_IF_ERROR(vt_transcript_append(tr, VT_TR_RECV, vt_conn_peer_pk(*c), first->raw, first->raw_len));
        vt_conn_set_transcript(*c, tr);
    }
    return VT_OK;
}

/* The trainer's service record at spath (*rec_ok = 0: it does not parse, and the arbiter rules on
 * it): with a pinned arbiter (pin) it must name it, else the arbiter would refuse the challenge;
 * a record signed for less than the floor, or expired, is reported. */
static vt_err read_record(auditor *a, const char *spath, const uint8_t *pin, vt_service *rec, int *rec_ok)
{
    const vt_challenge_opts *o = a->o;
    {
        uint8_t rb[VT_SERVICE_MAX_LEN];
        size_t rl = 0;
        VT_FORWARD_IF_ERROR(vt_service_read_file(spath, rb, sizeof rb, &rl));
        *rec_ok = vt_service_parse(rb, rl, rec) == VT_OK; /* else the arbiter rules on it */
    }
    if (*rec_ok && pin && !vt_service_names_arbiter(rec, pin)) {
        char fpr[VT_SIGN_FPR_HEX_LEN + 1];
        if (vt_sign_fingerprint(pin, fpr)) snprintf(fpr, sizeof fpr, "?");
        VT_RETURN_ERROR(VT_ERR_ARG, "the trainer's service record %s does not name the arbiter key %s among the %u it "
                        "accepts: that arbiter would refuse the challenge; choose one the record names", spath, fpr,
                        (unsigned)rec->n_arbiters);
    }
    if (*rec_ok && !o->quiet && (rec->expiry < vt_service_signed_at(rec) ||
                                 rec->expiry - vt_service_signed_at(rec) < VT_RECORD_FLOOR_S))
        fprintf(stderr, "auditor: the trainer's service record %s was signed for %lld s, under the %d s floor: the "
                "arbiter rules against the trainer that signed it\n", spath,
                (long long)((int64_t)rec->expiry - (int64_t)vt_service_signed_at(rec)), VT_RECORD_FLOOR_S);
    if (*rec_ok && rec->expiry <= (uint64_t)time(NULL) && !o->quiet)
        fprintf(stderr, "auditor: the trainer's service record %s expired (at %llu, seconds since 1970); its current "
                "record is asked for before the challenge\n", spath, (unsigned long long)rec->expiry);
    return VT_OK;
}

/* The run directory: its recipe (from the manifest), dataset, initial state (--init) and
 * commitment file; room for the own state hashes. */
static vt_err load_run(auditor *a, uint8_t commitment[176])
{
    const vt_challenge_opts *o = a->o;
    char path[4096], spec[VT_RECIPE_SPEC_MAX];
    uint8_t mh[32], dh[32];
    char *manifest = NULL;
    size_t ml = 0;
    VT_FORWARD_IF_ERROR(vt_store_open(o->run_dir, 1, &a->st));
    VT_FORWARD_IF_ERROR(vt_store_manifest(a->st, &manifest, &ml, mh));
    vt_err e = vt_manifest_parse(manifest, ml, &a->rcp, dh);
    free(manifest);
    VT_FORWARD_IF_ERROR(e);
    vt_recipe_dataset_spec(&a->rcp, spec, sizeof spec);
    VT_FORWARD_IF_ERROR(vt_data_load(spec, o->data_root, &a->ds));
    if (a->rcp.has_init) {
        int why = 0;
        VT_FORWARD_IF_ERROR(vt_init_for_replay(&a->rcp, o->init_path, o->run_dir, &a->init, &why));
    }
    vt_store_commitment_path(o->run_dir, path, sizeof path);
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(commitment, 1, 176, f) : 0;
    if (f) fclose(f);
    VT_RETURN_ERROR_IF(got != 176, VT_ERR_IO, "cannot read the commitment %s", path);
    a->state = calloc(a->rcp.steps + 1, 32);
    a->have = calloc(a->rcp.steps + 1, 1);
    VT_RETURN_ERROR_IF(!a->state || !a->have, VT_ERR_NOMEM, "out of memory");
    return VT_OK;
}

/* Own version of the run, and the step to challenge (*hi): the first disputed committed state, or
 * --step; then the operation chain of the segment the bisection will end in. */
static vt_err choose_step(auditor *a, vt_challenge_result *res, uint64_t *hi_out)
{
    const vt_challenge_opts *o = a->o;
    uint64_t target = o->step ? o->step : (o->until && o->until < a->rcp.steps ? o->until : a->rcp.steps), bad = 0;
    while (!has_state(&a->rcp, target)) target++;
    if (!o->quiet) fprintf(stderr, "auditor: replaying the run (order %s) to find the first disputed state\n",
                           vt_order_name(o->order));
    VT_FORWARD_IF_ERROR(own_states(a, target, &bad));
    uint64_t hi = o->step ? o->step : bad;
    VT_RETURN_ERROR_IF(!hi, VT_ERR_ARG, "every committed state agrees with our replay: nothing to challenge");
    VT_RETURN_ERROR_IF(!a->have[hi], VT_ERR_ARG, "step %llu has no committed state", (unsigned long long)hi);
    res->claimed_step = hi;
    /* What the game will ask, computed before challenging (docs/dispute.md "Clocks"): every committed
     * state before hi agrees, so the bisection ends in the segment from the committed state before hi
     * to hi, whose operation chain is the one costly answer. Both honest parties hold it before the
     * first question; neither side's cache is an advantage. */
    /* (with --step beyond our first disputed state, the bisection ends at that first one instead) */
    uint64_t end = bad && bad < hi ? bad : hi, lo = end - 1;
    while (lo > 0 && !has_state(&a->rcp, lo)) lo--;
    if (!o->quiet)
        fprintf(stderr, "auditor: computing the operation chain of steps %llu..%llu (the disputed segment)\n",
                (unsigned long long)lo + 1, (unsigned long long)end);
    VT_FORWARD_IF_ERROR(get_chain(a, lo, end));
    if (!o->quiet) fprintf(stderr, "auditor: challenging the committed state of step %llu\n", (unsigned long long)hi);
    *hi_out = hi;
    return VT_OK;
}

/* The CHALLENGE of step hi: the commitment, the own state hash, a fresh nonce, the service record
 * at spath. */
static vt_err make_challenge(auditor *a, const uint8_t commitment[176], uint64_t hi, const char *spath,
                             vt_msg_challenge *ch)
{
    memset(ch, 0, sizeof *ch);
    memcpy(ch->commitment, commitment, 176);
    memcpy(ch->auditor_pk, a->kp.pk, 32);
    ch->claimed_step = hi;
    memcpy(ch->auditor_state_hash, a->state[hi], 32);
    VT_FORWARD_IF_ERROR(vt_proto_nonce(ch->nonce)); /* fresh for this challenge: the verdict must name it */
    size_t sl = 0;
    VT_FORWARD_IF_ERROR(vt_service_read_file(spath, ch->service, sizeof ch->service, &sl));
    ch->service_len = (uint16_t)sl;
    return VT_OK;
}

/* The arbiter's VERDICT q, checked to be the one of challenge ch, into res. */
static vt_err take_verdict(vt_conn *c, const vt_msg_challenge *ch, const vt_msg *q, vt_challenge_result *res)
{
    const vt_msg_verdict *v = &q->body.verdict;
    char why[300];
    if (vt_game_verdict_for(v, ch, vt_conn_peer_pk(c), why, sizeof why)) /* never "the auditor lost" */
        return vt_set_error(VT_ERR_CRYPTO, "the arbiter's VERDICT is not for this challenge: %s", why);
    res->decided = 1;
    res->loser = v->loser;
    res->reason_code = v->reason_code;
    res->step = v->step;
    res->op = v->op;
    snprintf(res->reason, sizeof res->reason, "%s", v->reason);
    return VT_OK;
}

/* The game from the auditor's side: the arbiter dialled (the CHALLENGE sent), every question
 * answered until the verdict, a dropped connection resumed. */
static vt_err play_game(auditor *a, vt_msg_challenge *ch, const uint8_t *pin, const vt_service *rec,
                        vt_transcript *tr, vt_challenge_result *res)
{
    const vt_challenge_opts *o = a->o;
    vt_conn *c = NULL;
    /* The arbiter may be busy or under attack: until it has sent anything, a failed connection, a
     * connection closed before any message, or ERROR busy is retried within the deadline (pauses
     * 200 ms to 2 s; busy: up to --wait-ms). A game under way whose connection drops is resumed: the
     * same CHALLENGE, byte for byte, is sent again and the arbiter's game (or its verdict) picks it up;
     * re-dialling never opens a second game (docs/dispute.md "Connections are not parties"). */
    vt_msg first;
    memset(&first, 0, sizeof first);
    int have_first = 0;
    vt_err e = dial(a, ch, pin, rec, o->deadline_ms, &c, &first);
    if (!e) have_first = 1;
    /* the auditor's own transcript: the challenge (as sent) and everything after it */
    if (!e && tr) {
        vt_buf b;
        vt_buf_init(&b);
        /* the CHALLENGE went out before the transcript was attached: record it as sent (seq 0) */
        e = vt_msg_encode(VT_MSG_CHALLENGE, ch, 0, &a->kp, &b);
        if (!e) e = vt_transcript_append(tr, VT_TR_SENT, a->kp.pk, b.data, b.len);
        if (!e) e = vt_transcript_append(tr, VT_TR_RECV, vt_conn_peer_pk(c), first.raw, first.raw_len);
        vt_buf_free(&b);
        vt_conn_set_transcript(c, tr);
    }
    double lost_at = 0; /* when the connection to the arbiter dropped (0: it has not) */
    while (!e) {
        vt_msg q;
        if (have_first) {
            q = first;
            have_first = 0;
        } else {
            e = vt_recv_msg(c, VT_MSG_ANY, msg_wait_ms(o), NULL, &q);
        }
        if (e == VT_ERR_IO && resume_game(a, ch, pin, rec, tr, &c, &first, &lost_at) == VT_OK) {
            e = VT_OK;
            have_first = 1;
            continue;
        }
        if (e) break;
        lost_at = 0;
        if (q.hdr.type == VT_MSG_VERDICT) {
            e = take_verdict(c, ch, &q, res);
            vt_msg_free(&q);
            break;
        }
        if (q.hdr.type == VT_MSG_NOTE) { /* a heartbeat: the arbiter is waiting for the trainer */
            vt_msg_free(&q);
            continue;
        }
        if (q.hdr.type == VT_MSG_ERROR) {
            e = vt_set_error(VT_ERR_IO, "the arbiter refused: %s", q.body.error.message);
            vt_msg_free(&q);
            break;
        }
        res->questions++;
        if (!o->quiet) fprintf(stderr, "  arbiter asks %s\n", vt_msg_type_name(q.hdr.type));
        if (o->answer_delay_ms > 0) { /* tests only: a slow auditor */
            struct timespec ts = {o->answer_delay_ms / 1000, (long)(o->answer_delay_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        e = answer(a, c, &q);
        vt_msg_free(&q);
        if (e == VT_ERR_IO && vt_conn_dead(c)) e = VT_OK; /* the answer did not go out: the next receive resumes */
    }
    if (have_first) vt_msg_free(&first);
    vt_conn_close(c);
    return e;
}

static vt_err run(auditor *a, vt_challenge_result *res)
{
    const vt_challenge_opts *o = a->o;
    uint8_t commitment[176];
    VT_FORWARD_IF_ERROR(vt_sign_init());
    VT_FORWARD_IF_ERROR(vt_sign_read_secret_key(o->key_path, &a->kp));
    /* The arbiter: pinned by default (docs/dispute.md "Verdict"); and the trainer's record, which must
     * name it (else the arbiter refuses the challenge: the trainer never accepted it) and be fresh.
     * Checked before the replay, which may take long. */
    VT_RETURN_ERROR_IF(!o->arbiter_pk_path && !o->no_pin_arbiter, VT_ERR_ARG,
                       "no arbiter key: pin the arbiter with --arbiter-key FILE.pub (or, unsafe, --no-pin-arbiter)");
    uint8_t apk[32], *pin = NULL;
    if (o->arbiter_pk_path) {
        VT_FORWARD_IF_ERROR(vt_sign_read_public_key(o->arbiter_pk_path, apk));
        pin = apk;
    }
    char spath[4096];
    if (o->service_path)
        snprintf(spath, sizeof spath, "%s", o->service_path);
    else
        snprintf(spath, sizeof spath, "%s/%s", o->run_dir, VT_SERVICE_FILE);
    vt_service rec;
    int rec_ok;
    VT_FORWARD_IF_ERROR(read_record(a, spath, pin, &rec, &rec_ok));
    VT_FORWARD_IF_ERROR(load_run(a, commitment));
    uint64_t hi = 0;
    VT_FORWARD_IF_ERROR(choose_step(a, res, &hi));

    vt_transcript *tr = NULL;
    if (o->transcript) VT_FORWARD_IF_ERROR(vt_transcript_open(o->transcript, &tr));
    vt_msg_challenge ch;
    VT_FORWARD_IF_ERROR(make_challenge(a, commitment, hi, spath, &ch));
    /* the trainer's current record, asked for after the replay (which may have taken long) and right
     * before the challenge (docs/dispute.md "Fresh service records") */
    /* (only from a record of the commitment's key for its run: another is the arbiter's to refuse, and its
     * address is nobody's to dial) */
    if (rec_ok && memcmp(rec.trainer_pk, commitment + 80, 32) == 0 && memcmp(rec.manifest_hash, commitment + 8, 32) == 0)
        fetch_record(a, &rec, commitment, &ch);
    vt_err e = play_game(a, &ch, pin, rec_ok ? &rec : NULL, tr, res);
    vt_err te = vt_transcript_close(tr);
    return e ? e : te;
}

vt_err vt_challenge_run(const vt_challenge_opts *o, vt_challenge_result *res)
{
    auditor a;
    memset(&a, 0, sizeof a);
    memset(res, 0, sizeof *res);
    a.o = o;
    double t0 = vt_now();
    vt_err e = run(&a, res);
    res->seconds = vt_now() - t0;
    if (a.have_chain) vt_seg_chain_free(&a.chain);
    free(a.state);
    free(a.have);
    vt_data_free(&a.ds);
    vt_st_free(&a.init);
    vt_store_close(a.st);
    vt_keypair_wipe(&a.kp);
    return e;
}
