/* vt_arbiter_check.c - `arbiter check`: the offline check of a game's transcript, the game replayed
 * from its recorded answers, and the transcript's consistency and time checks. */
#include "vt_arbiter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_cli.h"
#include "../common/vt_hash.h"
#include "../merkle/vt_sign.h"
#include "../protocol/vt_proto.h"
#include "vt_arbiter_int.h"

/* ------------------------------------------------------------------ check */

typedef struct {
    vt_transcript_reader *r;
    vt_transcript_record rec;
    int have, eof;
    uint8_t arbiter_pk[32], trainer_pk[32], auditor_pk[32];
    char endpoint[VT_MSG_ADDR_MAX + 1];
    uint32_t attempts, failed;
    int gone; /* VT_REASON_AUDITOR_GONE / _PREEMPTED: the auditor's last missing answer, as the arbiter recorded it */
    char *rests, rests_buf[1200];
    int have_na;     /* the last NO_ANSWER note the replay took (a verdict by deadline rests on it) */
    vt_msg_note na;
    vt_err err;
} replay;

static int peek(replay *R)
{
    if (R->have) return 1;
    if (R->eof) return 0;
    vt_err e = vt_transcript_next(R->r, &R->rec, &R->eof);
    if (e) {
        R->err = e;
        R->eof = 1;
        return 0;
    }
    R->have = !R->eof;
    return R->have;
}

/* The next record if it is one of the arbiter's notes about `party` (consumed into *nt). */
static int take_note(replay *R, int party, vt_msg_note *nt)
{
    if (!peek(R) || R->rec.dir != VT_TR_NOTE) return 0;
    vt_msg m;
    if (memcmp(R->rec.author_pk, R->arbiter_pk, 32) != 0 ||
        vt_msg_decode(R->rec.bytes, R->rec.len, R->arbiter_pk, NULL, &m) != VT_OK) {
        R->err = vt_set_error(VT_ERR_CRYPTO, "transcript: a note at offset %llu is not signed by the arbiter",
                              (unsigned long long)R->rec.offset);
        R->eof = 1, R->have = 0;
        return 0;
    }
    int ok = m.hdr.type == VT_MSG_NOTE && m.body.note.party == party && m.body.note.kind != VT_NOTE_GAME;
    if (ok) {
        *nt = m.body.note;
        R->have = 0;
    }
    vt_msg_free(&m);
    return ok;
}

/* Connection attempts: each must have dialled the address of the signed service record. */
static vt_err take_connects(replay *R, int party, vt_msg_note *last_no_answer, int *no_answer)
{
    vt_msg_note nt;
    while (!*no_answer && take_note(R, party, &nt)) {
        if (nt.kind == VT_NOTE_NO_ANSWER) {
            *last_no_answer = nt;
            *no_answer = 1;
            break;
        }
        if (party == VT_ROLE_AUDITOR && nt.code == 0) continue; /* the auditor resumed its game on a new connection */
        size_t n = strlen(R->endpoint);
        VT_RETURN_ERROR_IF(party != VT_ROLE_TRAINER || !n || strncmp(nt.text, R->endpoint, n) != 0 ||
                               (nt.text[n] != 0 && nt.text[n] != ':'),
                           VT_ERR_FORMAT, "transcript: the arbiter dialled \"%.80s\", not the trainer's signed address %s",
                           nt.text, R->endpoint);
        R->attempts++;
        R->failed += nt.code == 1; /* code 2: the arbiter's own failure, not the trainer's */
    }
    return R->err;
}

static int same_question(replay *R, int qtype, const vt_buf *want)
{
    vt_msg m;
    if (vt_msg_decode(R->rec.bytes, R->rec.len, R->arbiter_pk, NULL, &m) != VT_OK) return 0;
    vt_buf got;
    vt_buf_init(&got);
    int same = m.hdr.type == qtype && vt_msg_body_encode(m.hdr.type, &m.body, &got) == VT_OK && got.len == want->len &&
               memcmp(got.data, want->data, want->len) == 0;
    vt_buf_free(&got);
    vt_msg_free(&m);
    return same;
}

static vt_err no_answer_from_note(replay *R, const vt_msg_note *nt)
{
    R->na = *nt;
    R->have_na = 1;
    snprintf(R->rests_buf, sizeof R->rests_buf,
             "the arbiter's signed account (NOTE records, no party's signature): %.700s; %u connection attempts to %s, %u "
             "failed; the party's clock used %llu of %llu ms",
             nt->text, R->attempts, R->endpoint[0] ? R->endpoint : "-", R->failed, (unsigned long long)nt->v[2],
             (unsigned long long)nt->v[3]);
    R->rests = R->rests_buf;
    R->gone = nt->party == VT_ROLE_AUDITOR && nt->code == VT_NOANS_GONE        ? VT_REASON_AUDITOR_GONE
              : nt->party == VT_ROLE_AUDITOR && nt->code == VT_NOANS_PREEMPTED ? VT_REASON_PREEMPTED
                                                                              : 0;
    VT_RETURN_ERROR(nt->code == VT_NOANS_LOCAL ? VT_ERR_INTERNAL : VT_ERR_IO, "%.900s (recorded by the arbiter)", nt->text);
}

/* The next record is the trainer's ERROR ending a session (session_error): the arbiter reconnected. */
static int session_end_record(replay *R, int party)
{
    if (party != VT_ROLE_TRAINER || !peek(R) || R->rec.dir != VT_TR_RECV || memcmp(R->rec.author_pk, R->trainer_pk, 32) != 0)
        return 0;
    vt_msg m;
    if (vt_msg_decode(R->rec.bytes, R->rec.len, R->trainer_pk, NULL, &m) != VT_OK) return 0;
    int se = vti_session_error(&m);
    vt_msg_free(&m);
    return se;
}

static vt_err replay_ask(void *ctx, int party, int qtype, const void *q, int atype, const vt_ask_bounds *b, vt_msg *ans)
{
    replay *R = ctx;
    (void)b; /* the recorded answers passed the live limits; timing is the arbiter's signed account */
    R->gone = 0;
    vt_msg_note nt;
    int na = 0;
    VT_FORWARD_IF_ERROR(take_connects(R, party, &nt, &na));
    if (na) return no_answer_from_note(R, &nt); /* unreachable: the question was never sent */
    /* the arbiter's question, exactly as the engine would ask it now */
    VT_RETURN_ERROR_IF(!peek(R) || R->rec.dir != VT_TR_SENT, VT_ERR_FORMAT,
                       "transcript: the recorded game does not ask %s here", vt_msg_type_name(qtype));
    vt_buf want;
    vt_buf_init(&want);
    vt_err e = vt_msg_body_encode(qtype, q, &want);
    int same = !e && same_question(R, qtype, &want);
    R->have = 0;
    if (!same) vt_buf_free(&want);
    VT_RETURN_ERROR_IF(!same, VT_ERR_FORMAT, "transcript: the recorded question differs from %s", vt_msg_type_name(qtype));
    /* the same question sent again after a reconnection (and the attempts in between, and the
     * trainer's ERROR that ended a session, which is never an answer): skip the repeats */
    for (;;) {
        e = take_connects(R, party, &nt, &na);
        if (e || na) break;
        if (session_end_record(R, party)) {
            R->have = 0;
            continue;
        }
        if (!(peek(R) && R->rec.dir == VT_TR_SENT && same_question(R, qtype, &want))) break;
        R->have = 0;
    }
    vt_buf_free(&want);
    VT_FORWARD_IF_ERROR(e);
    if (na) return no_answer_from_note(R, &nt);
    /* the party's answer, if any was recorded */
    const uint8_t *pk = party == VT_ROLE_TRAINER ? R->trainer_pk : R->auditor_pk;
    if (!peek(R) || R->rec.dir != VT_TR_RECV || memcmp(R->rec.author_pk, pk, 32) != 0) {
        if (take_note(R, party, &nt) && nt.kind == VT_NOTE_NO_ANSWER) return no_answer_from_note(R, &nt);
        VT_RETURN_ERROR(VT_ERR_IO, "no answer was recorded (the party missed its deadline or sent an invalid message)");
    }
    e = vt_msg_decode(R->rec.bytes, R->rec.len, pk, NULL, ans);
    R->have = 0;
    VT_RETURN_ERROR_IF(e, VT_ERR_CRYPTO, "transcript: an answer does not verify: %s", vt_errmsg());
    VT_RETURN_ERROR_IF(ans->hdr.type != atype && ans->hdr.type != VT_MSG_ERROR, VT_ERR_FORMAT,
                       "transcript: an answer has the wrong type");
    return VT_OK;
}

static int replay_gone(void *ctx, int party)
{
    replay *R = ctx;
    return party == VT_ROLE_AUDITOR ? R->gone : 0;
}

static void replay_endpoint(void *ctx, const char *addr)
{
    replay *R = ctx;
    snprintf(R->endpoint, sizeof R->endpoint, "%s", addr);
}

/* The frame type of a record's message from its header (0: not a frame header), without decoding it. */
static int frame_type(const vt_transcript_record *rr)
{
    if (rr->len < VT_MSG_HEADER_LEN || memcmp(rr->bytes, VT_MSG_MAGIC, 4) != 0) return 0;
    int t = vt_get_u16le(rr->bytes + 6);
    return t > 0 && t < VT_MSG_TYPE_COUNT_ ? t : 0;
}

/* "key FINGERPRINT (the arbiter's key)" for a record's author key; whether its signature verifies under
 * that key is said too (a record whose signature does not verify was signed by nobody we know). */
static void describe_signer(const vt_transcript_record *rr, const uint8_t arbiter_pk[32], const uint8_t trainer_pk[32],
                            const uint8_t auditor_pk[32], char *out, size_t cap)
{
    char fpr[VT_SIGN_FPR_HEX_LEN + 1];
    if (vt_sign_fingerprint(rr->author_pk, fpr)) snprintf(fpr, sizeof fpr, "?");
    const uint8_t *pk = rr->author_pk;
    const char *whose = memcmp(pk, arbiter_pk, 32) == 0   ? "the arbiter's key"
                        : memcmp(pk, trainer_pk, 32) == 0 ? "the trainer's key"
                        : memcmp(pk, auditor_pk, 32) == 0 ? "the auditor's key"
                                                          : "a key of none of the parties";
    vt_msg m;
    int verifies = vt_msg_decode(rr->bytes, rr->len, pk, NULL, &m) == VT_OK;
    if (verifies) vt_msg_free(&m);
    snprintf(out, cap, "%s key %s (%s)%s", verifies ? "signed by" : "naming", fpr, whose,
             verifies ? "" : ", whose signature does not verify under it");
}

static const char *dir_name(int dir)
{
    return dir == VT_TR_SENT ? "sent" : dir == VT_TR_RECV ? "received" : dir == VT_TR_NOTE ? "a note" : "?";
}

/* What a first pass over the transcript finds (docs/dispute.md "Offline check"): the arbiter's key (the
 * author of every record it wrote), its verdict, what makes the transcript inconsistent, and the
 * trainer's service records in its SERVICE answers before the verdict. */
typedef struct {
    uint8_t arbiter_pk[32];
    vt_msg_verdict v;
    int have_v;
    uint64_t v_offset;
    char inconsistent[560]; /* why the transcript is inconsistent (empty: it is not) */
    /* the SERVICE answers that echo this game's question and carry a record the commitment's key
     * signed: the one whose signing time leads most over the latest the arbiter can have received it */
    int have_lead;
    int64_t lead;                    /* its signing time less after_s (seconds) */
    uint64_t lead_serial, lead_offset, lead_after_s;
    /* of those, the newest record of this run (the commitment's manifest) */
    int have_newest;
    uint64_t newest_serial, newest_expiry, newest_offset;
} check_scan;

/* A SERVICE answer of the trainer (record rr), received at most after_s seconds after the verdict's time. */
static void scan_service(check_scan *S, const vt_transcript_record *rr, const vt_msg_challenge *ch,
                         const uint8_t trainer_pk[32], uint64_t after_s)
{
    vt_msg m;
    if (vt_msg_decode(rr->bytes, rr->len, trainer_pk, NULL, &m) != VT_OK) return;
    uint8_t cm_hash[32];
    vt_commitment_bytes_hash(ch->commitment, cm_hash);
    const vt_msg_service *a = &m.body.service;
    vt_service sv;
    int relied = m.hdr.type == VT_MSG_SERVICE && memcmp(a->commitment_hash, cm_hash, 32) == 0 &&
                 memcmp(a->auditor_nonce, ch->nonce, 32) == 0 && vt_service_parse(a->record, a->record_len, &sv) == VT_OK &&
                 memcmp(sv.trainer_pk, trainer_pk, 32) == 0;
    vt_msg_free(&m);
    if (!relied) return;
    int64_t lead = (int64_t)vt_service_signed_at(&sv) - (int64_t)after_s;
    if (!S->have_lead || lead > S->lead) {
        S->have_lead = 1, S->lead = lead, S->lead_serial = sv.serial, S->lead_offset = rr->offset;
        S->lead_after_s = after_s;
    }
    if (memcmp(sv.manifest_hash, ch->commitment + 8, 32) == 0 && (!S->have_newest || sv.serial > S->newest_serial)) {
        S->have_newest = 1, S->newest_serial = sv.serial, S->newest_expiry = sv.expiry;
        S->newest_offset = rr->offset;
    }
}

static vt_err scan_check(const char *path, const vt_msg_challenge *ch, const uint8_t trainer_pk[32],
                         const uint8_t auditor_pk[32], check_scan *S)
{
    vt_transcript_reader *r = NULL;
    vt_transcript_record rr;
    int eof = 0, have_pk = 0;
    uint64_t next = VT_TR_HEADER_LEN; /* where the next record starts */
    uint64_t deadline_ms = 0, conn_end_ms = 0; /* the GAME note's deadline; the end of the last attempt to connect */
    memset(S, 0, sizeof *S);
    vt_err e = vt_transcript_reader_open(path, &r);
    char sig[400];
    static const uint8_t no_key[32] = {0};
    while (!e) {
        e = vt_transcript_next(r, &rr, &eof);
        if (e) {
            if (S->have_v) {
                char why[512];
                snprintf(why, sizeof why, "%s", vt_errmsg());
                e = vt_set_error(VT_ERR_FORMAT, "inconsistent transcript: trailing bytes at offset %llu, after the "
                                 "verdict at offset %llu, are not a whole record (%s)", (unsigned long long)next,
                                 (unsigned long long)S->v_offset, why);
            }
            break;
        }
        if (eof) break;
        next = rr.offset + VT_TR_RECORD_HEADER_LEN + rr.len;
        int type = frame_type(&rr);
        if (S->have_v) {
            /* the live arbiter records its verdict once, last (its copies to the parties unrecorded) */
            describe_signer(&rr, S->arbiter_pk, trainer_pk, auditor_pk, sig, sizeof sig);
            if (type == VT_MSG_VERDICT)
                snprintf(S->inconsistent, sizeof S->inconsistent, "inconsistent transcript: a second VERDICT (%s) at "
                         "offset %llu, after the verdict at offset %llu, %s", dir_name(rr.dir),
                         (unsigned long long)rr.offset, (unsigned long long)S->v_offset, sig);
            else
                snprintf(S->inconsistent, sizeof S->inconsistent, "inconsistent transcript: a record (%s, %s) at offset "
                         "%llu after the verdict at offset %llu, %s", type ? vt_msg_type_name(type) : "not a message",
                         dir_name(rr.dir), (unsigned long long)rr.offset, (unsigned long long)S->v_offset, sig);
            break; /* the first offending record is named */
        }
        if (rr.dir == VT_TR_SENT || rr.dir == VT_TR_NOTE) {
            if (!have_pk) memcpy(S->arbiter_pk, rr.author_pk, 32), have_pk = 1;
            if (memcmp(rr.author_pk, S->arbiter_pk, 32) != 0) {
                e = vt_set_error(VT_ERR_CRYPTO, "transcript: the record at offset %llu is signed by another arbiter key "
                                 "than the first one", (unsigned long long)rr.offset);
                break;
            }
        }
        vt_msg m;
        if (type == VT_MSG_VERDICT) {
            if (rr.dir == VT_TR_SENT && vt_msg_decode(rr.bytes, rr.len, S->arbiter_pk, NULL, &m) == VT_OK) {
                S->v = m.body.verdict, S->have_v = 1, S->v_offset = rr.offset;
                vt_msg_free(&m);
            } else if (!S->inconsistent[0]) { /* a VERDICT the arbiter did not send: the first one is named */
                describe_signer(&rr, have_pk ? S->arbiter_pk : no_key, trainer_pk, auditor_pk, sig, sizeof sig);
                snprintf(S->inconsistent, sizeof S->inconsistent, "inconsistent transcript: a VERDICT (%s) at offset "
                         "%llu that is not the arbiter's verdict, %s", dir_name(rr.dir), (unsigned long long)rr.offset,
                         sig);
            }
        } else if (rr.dir == VT_TR_NOTE && type == VT_MSG_NOTE &&
                   vt_msg_decode(rr.bytes, rr.len, S->arbiter_pk, NULL, &m) == VT_OK) {
            const vt_msg_note *nt = &m.body.note;
            if (nt->kind == VT_NOTE_GAME) deadline_ms = nt->v[0];
            if (nt->kind == VT_NOTE_CONNECT && nt->party == VT_ROLE_TRAINER && nt->v[0] <= UINT32_MAX &&
                nt->v[1] <= UINT32_MAX)
                conn_end_ms = nt->v[0] + nt->v[1];
            vt_msg_free(&m);
        } else if (rr.dir == VT_TR_RECV && type == VT_MSG_SERVICE && memcmp(rr.author_pk, trainer_pk, 32) == 0) {
            /* it came at most one answer's deadline after the end of the last attempt to connect (both
             * milliseconds since the game began, which is within a second of the verdict's time) */
            uint64_t ms = conn_end_ms + (deadline_ms <= UINT32_MAX ? deadline_ms : UINT32_MAX);
            scan_service(S, &rr, ch, trainer_pk, (ms + 999) / 1000 + 1);
        }
    }
    vt_transcript_reader_close(r);
    if (!e && !have_pk) e = vt_set_error(VT_ERR_FORMAT, "transcript %s holds no record of the arbiter", path);
    return e;
}

static int same_verdict(const vt_msg_verdict *a, const vt_msg_verdict *b)
{
    return a->loser == b->loser && a->reason_code == b->reason_code && a->step == b->step && a->op == b->op &&
           memcmp(a->commitment_hash, b->commitment_hash, 32) == 0 && memcmp(a->arbiter_pk, b->arbiter_pk, 32) == 0 &&
           memcmp(a->auditor_pk, b->auditor_pk, 32) == 0 && a->claimed_step == b->claimed_step &&
           memcmp(a->claimed_state, b->claimed_state, 32) == 0 && memcmp(a->auditor_nonce, b->auditor_nonce, 32) == 0 &&
           memcmp(a->trainer_nonce, b->trainer_nonce, 32) == 0 && a->time == b->time;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t sat_ms(uint64_t s) { return s > UINT64_MAX / 1000u ? UINT64_MAX : s * 1000u; }

/* Time sanity (docs/dispute.md "Offline check"), 1: the verdict's time (when the arbiter took the challenge)
 * must not precede, by more than VT_CLOCK_SKEW_S, the signing time of a trainer's record it relies on: the
 * challenge's, and those of the SERVICE answers (each against the latest the arbiter can have received it).
 * A verdict that says so itself (clock skew, nobody loses) is the arbiter's own finding. */
static int clock_behind(const vt_msg_verdict *v, const vt_msg_challenge *ch, const check_scan *S, char *out, size_t cap)
{
    if (v->reason_code == VT_REASON_CLOCK_SKEW && v->loser == VT_LOSER_NONE) return 0;
    vt_service sv;
    if (vt_service_parse(ch->service, ch->service_len, &sv) == VT_OK && memcmp(sv.trainer_pk, ch->commitment + 80, 32) == 0) {
        uint64_t s = vt_service_signed_at(&sv);
        if (s > v->time && s - v->time > VT_CLOCK_SKEW_S) {
            snprintf(out, cap, "the verdict's time %llu precedes the signing time %llu of the trainer's service record "
                     "(serial %llu, in the challenge) by %llu s, more than the %d s allowed for the clocks' difference: "
                     "the arbiter's clock was behind", (unsigned long long)v->time, (unsigned long long)s,
                     (unsigned long long)sv.serial, (unsigned long long)(s - v->time), VT_CLOCK_SKEW_S);
            return 1;
        }
    }
    if (S->have_lead && S->lead > 0 && (uint64_t)S->lead > v->time && (uint64_t)S->lead - v->time > VT_CLOCK_SKEW_S) {
        uint64_t s = (uint64_t)S->lead + S->lead_after_s;
        snprintf(out, cap, "the verdict's time %llu precedes the signing time %llu of the trainer's service record "
                 "(serial %llu, in its SERVICE answer at offset %llu) by %llu s, more than the %llu s by which that answer "
                 "can have come after it plus the %d s allowed for the clocks' difference: the arbiter's clock was behind",
                 (unsigned long long)v->time, (unsigned long long)s, (unsigned long long)S->lead_serial,
                 (unsigned long long)S->lead_offset, (unsigned long long)(s - v->time),
                 (unsigned long long)S->lead_after_s, VT_CLOCK_SKEW_S);
        return 1;
    }
    return 0;
}

/* Time sanity, 2: a verdict against the trainer that rests on its unreachability (the arbiter's note: the
 * trainer unreachable or its connection lost) binds it only while the record the game relied on - the
 * newest valid record of this run, the challenge's or a SERVICE answer's - had not expired when the
 * arbiter's notes end the trainer's failure (the verdict's time plus the note's time and duration). */
static int unreachable_after_expiry(const vt_msg_verdict *v, const vt_msg_challenge *ch, const replay *R,
                                    const check_scan *S, char *out, size_t cap)
{
    if ((v->loser != VT_LOSER_TRAINER && v->loser != VT_LOSER_BOTH) || v->reason_code != VT_REASON_NO_ANSWER ||
        !R->have_na || R->na.party != VT_ROLE_TRAINER ||
        (R->na.code != VT_NOANS_UNREACHABLE && R->na.code != VT_NOANS_LOST))
        return 0;
    uint64_t serial = 0, expiry = 0, off = 0;
    int have = 0;
    vt_service sv;
    if (vt_service_parse(ch->service, ch->service_len, &sv) == VT_OK && memcmp(sv.trainer_pk, ch->commitment + 80, 32) == 0 &&
        memcmp(sv.manifest_hash, ch->commitment + 8, 32) == 0)
        have = 1, serial = sv.serial, expiry = sv.expiry;
    if (S->have_newest && (!have || S->newest_serial > serial))
        have = 1, serial = S->newest_serial, expiry = S->newest_expiry, off = S->newest_offset;
    if (!have) return 0;
    uint64_t game_ms = sat_add(R->na.v[0], R->na.v[1]), end_ms = sat_add(sat_ms(v->time), game_ms);
    if (end_ms < sat_ms(expiry)) return 0;
    char where[64];
    if (off)
        snprintf(where, sizeof where, "in its SERVICE answer at offset %llu", (unsigned long long)off);
    else
        snprintf(where, sizeof where, "in the challenge");
    snprintf(out, cap, "a verdict against the trainer that rests on its %s (the arbiter's notes), which they end at %llu.%03llu "
             "s (the verdict's time %llu plus %llu ms of the game), not before the expiry %llu of the newest service "
             "record of this run the game relied on (serial %llu, %s): a trainer is not bound to be reachable after its "
             "record expired", R->na.code == VT_NOANS_LOST ? "lost connection" : "unreachability",
             (unsigned long long)(end_ms / 1000u), (unsigned long long)(end_ms % 1000u), (unsigned long long)v->time,
             (unsigned long long)game_ms, (unsigned long long)expiry, (unsigned long long)serial, where);
    return 1;
}

vt_err vt_arbiter_check(const char *path, const char *data_root, vt_order order, const uint8_t *pinned_pk,
                        vt_game_result *res, vt_check_report *rep)
{
    replay R;
    memset(&R, 0, sizeof R);
    memset(rep, 0, sizeof *rep);
    memset(res, 0, sizeof *res);
    char *rests_on = rep->rests_on;
    size_t rests_cap = sizeof rep->rests_on;
    vt_msg_verdict rv; /* the recorded verdict */
    memset(&rv, 0, sizeof rv);
    check_scan S; /* the first pass: the arbiter's key, its verdict, what follows it, the trainer's records */
    memset(&S, 0, sizeof S);
    VT_FORWARD_IF_ERROR(vt_sign_init());
    VT_FORWARD_IF_ERROR(vt_transcript_reader_open(path, &R.r));
    vt_msg ch;
    memset(&ch, 0, sizeof ch);
    vt_err e = VT_OK;
    /* the first record: the auditor's challenge, signed by the auditor's key it names */
    if (!peek(&R) || R.rec.dir != VT_TR_RECV)
        e = vt_set_error(VT_ERR_FORMAT, "transcript %s does not start with a challenge", path);
    if (!e) {
        memcpy(R.auditor_pk, R.rec.author_pk, 32);
        e = vt_msg_decode(R.rec.bytes, R.rec.len, R.auditor_pk, NULL, &ch);
        R.have = 0;
        if (!e && ch.hdr.type != VT_MSG_CHALLENGE) e = vt_set_error(VT_ERR_FORMAT, "the first message is not a challenge");
        if (!e && memcmp(ch.body.challenge.auditor_pk, R.auditor_pk, 32) != 0)
            e = vt_set_error(VT_ERR_FORMAT, "the challenge names another auditor key than its signer's");
    }
    if (!e) {
        memcpy(R.trainer_pk, ch.body.challenge.commitment + 80, 32);
        e = scan_check(path, &ch.body.challenge, R.trainer_pk, R.auditor_pk, &S);
        if (!e) memcpy(R.arbiter_pk, S.arbiter_pk, 32), memcpy(rep->arbiter_pk, R.arbiter_pk, 32);
        if (!e && !S.have_v) e = vt_set_error(VT_ERR_FORMAT, "transcript %s holds no verdict", path);
        if (!e) rv = S.v;
    }
    vt_game_limits lim = {0, 0, 0, 0, {0}}, *limp = NULL;
    if (!e && peek(&R) && R.rec.dir == VT_TR_NOTE) { /* the game's limits, as the arbiter signed them */
        vt_msg m;
        e = vt_msg_decode(R.rec.bytes, R.rec.len, R.arbiter_pk, NULL, &m);
        R.have = 0;
        if (!e && (m.hdr.type != VT_MSG_NOTE || m.body.note.kind != VT_NOTE_GAME))
            e = vt_set_error(VT_ERR_FORMAT, "transcript: the note after the challenge is not the game's limits");
        if (!e) {
            lim.max_game_bytes = m.body.note.v[2], lim.max_op_flop = m.body.note.v[3];
            lim.min_rate = m.body.note.code ? (double)m.body.note.code * 1e6 : 0; /* as the live game had them */
            lim.max_work_ms = (uint64_t)m.body.note.n * 1000u;
            limp = &lim;
        }
        vt_msg_free(&m);
        while (!e && peek(&R) && R.rec.dir == VT_TR_NOTE) { /* the GEMM arithmetics' weights, as recorded */
            e = vt_msg_decode(R.rec.bytes, R.rec.len, R.arbiter_pk, NULL, &m);
            if (!e && (m.hdr.type != VT_MSG_NOTE || m.body.note.kind != VT_NOTE_ARITH)) {
                vt_msg_free(&m);
                break; /* a note of the game itself */
            }
            R.have = 0;
            if (!e) e = vt_game_arith_from_note(&m.body.note, &lim);
            vt_msg_free(&m);
        }
    }
    if (!e) {
        vt_game_io io = {replay_ask, &R, NULL, replay_endpoint, R.arbiter_pk, rv.time, replay_gone}; /* the game's identity, as recorded */
        vt_game_play(&io, &ch.body.challenge, data_root, order, limp, res);
        /* the recorded verdict follows */
        int found = 0;
        while (peek(&R)) {
            vt_msg v;
            R.have = 0;
            if (R.rec.dir != VT_TR_SENT || vt_msg_decode(R.rec.bytes, R.rec.len, R.arbiter_pk, NULL, &v)) continue;
            if (v.hdr.type == VT_MSG_VERDICT) {
                found = 1;
                rep->matches = same_verdict(&v.body.verdict, &res->v);
            }
            vt_msg_free(&v);
            if (found) break;
        }
        if (R.err) e = R.err;
        else if (!found) e = vt_set_error(VT_ERR_FORMAT, "transcript %s holds no verdict", path);
    }
    if (!e) { /* does the verdict bind? (docs/dispute.md "Offline check") */
        char fa[65], fp[65];
        vt_hex(R.arbiter_pk, 32, fa);
        vt_service sv;
        int against_trainer = rv.loser == VT_LOSER_TRAINER || rv.loser == VT_LOSER_BOTH;
        if (S.inconsistent[0]) {
            snprintf(rep->refused, sizeof rep->refused, "%s", S.inconsistent);
        } else if (memcmp(rv.arbiter_pk, R.arbiter_pk, 32) != 0) {
            vt_hex(rv.arbiter_pk, 32, fp);
            snprintf(rep->refused, sizeof rep->refused, "the verdict names arbiter key %s but the transcript is signed "
                     "by %s: it was re-signed by another key", fp, fa);
        } else if (pinned_pk && memcmp(pinned_pk, R.arbiter_pk, 32) != 0) {
            vt_hex(pinned_pk, 32, fp);
            snprintf(rep->refused, sizeof rep->refused, "the transcript is signed by arbiter key %s, not the pinned %s",
                     fa, fp);
        } else if (against_trainer && (vt_service_parse(ch.body.challenge.service, ch.body.challenge.service_len, &sv) ||
                                       !vt_service_names_arbiter(&sv, R.arbiter_pk))) {
            snprintf(rep->refused, sizeof rep->refused, "a verdict against the trainer from arbiter key %s, which the "
                     "trainer never accepted: its signed service record in the challenge does not name it", fa);
        } else if (clock_behind(&rv, &ch.body.challenge, &S, rep->refused, sizeof rep->refused) ||
                   unreachable_after_expiry(&rv, &ch.body.challenge, &R, &S, rep->refused, sizeof rep->refused)) {
            /* rep->refused says why */
        }
        rep->valid = rep->matches && !rep->refused[0];
    }
    if (rests_cap) {
        if (R.rests)
            snprintf(rests_on, rests_cap, "%s", R.rests);
        else if (res->v.reason_code == VT_REASON_OVER_LIMIT)
            snprintf(rests_on, rests_cap, "the trainer's signed manifest and the limits the arbiter signed in the transcript");
        else
            snprintf(rests_on, rests_cap, "messages signed by the parties (every signature re-verified)%s",
                     res->recompute_seconds > 0 ? " and the arbiter's recomputation of one operation, repeated here" : "");
    }
    vt_msg_free(&ch);
    vt_transcript_reader_close(R.r);
    return e;
}

