/* vt_arbiter.c - the arbiter's service and its offline transcript check. */
#include "vt_arbiter.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/vt_bytes.h"
#include "../common/vt_cli.h"
#include "../merkle/vt_sign.h"
#include "../protocol/vt_proto.h"

/* ------------------------------------------------------------------ live */

typedef struct {
    const vt_arbiter_opts *o;
    vt_keypair kp;
    vt_conn *ct, *ca;          /* trainer, auditor */
    vt_transcript *tr;
    char trainer_addr[VT_MSG_ADDR_MAX + 1];
    uint8_t trainer_pk[32];
    int reconnects;
    uint64_t bytes;
} live;

static vt_err connect_trainer(live *L)
{
    vt_err e = vt_connect(L->trainer_addr, &L->kp, L->trainer_pk, L->o->deadline_ms, &L->ct, NULL);
    if (!e) vt_conn_set_transcript(L->ct, L->tr);
    return e;
}

static vt_err live_ask(void *ctx, int party, int qtype, const void *q, int atype, vt_msg *ans)
{
    live *L = ctx;
    for (int attempt = 0;; attempt++) {
        vt_conn *c = party == VT_ROLE_TRAINER ? L->ct : L->ca;
        VT_RETURN_ERROR_IF(!c, VT_ERR_IO, "cannot reach the %s", party == VT_ROLE_TRAINER ? "trainer" : "auditor");
        vt_err e = vt_send_msg(c, qtype, q, &L->kp);
        if (!e) e = vt_recv_msg(c, atype, L->o->deadline_ms, NULL, ans);
        if (!e) {
            L->bytes += ans->raw_len;
            return VT_OK;
        }
        /* A dropped connection to the trainer (not a deadline, not a bad message): reconnect once and ask
         * again. Every answer is a function of the commitment, so nothing established is lost. */
        int dropped = !vt_proto_deadline_exceeded() && e == VT_ERR_IO;
        if (party != VT_ROLE_TRAINER || !dropped || attempt > 0 || L->reconnects >= 3) return e;
        char why[512];
        snprintf(why, sizeof why, "%s", vt_errmsg());
        vt_conn_close(L->ct);
        L->ct = NULL;
        L->reconnects++;
        if (connect_trainer(L)) return vt_set_error(VT_ERR_IO, "%s; reconnecting failed: %s", why, vt_errmsg());
    }
}

static void live_note(void *ctx, const char *line)
{
    live *L = ctx;
    if (!L->o->quiet) fprintf(stderr, "arbiter: %s\n", line);
}

typedef struct {
    const vt_arbiter_opts *o;
    vt_conn *ca;
    int id;
} game_job;

static void *game_main(void *p)
{
    game_job *job = p;
    const vt_arbiter_opts *o = job->o;
    live L;
    memset(&L, 0, sizeof L);
    L.o = o;
    L.ca = job->ca;
    char path[4096];
    time_t now = time(NULL);
    snprintf(path, sizeof path, "%s/game-%lld-%d.vttr", o->transcript_dir ? o->transcript_dir : ".", (long long)now,
             job->id);
    vt_game_result res;
    memset(&res, 0, sizeof res);
    vt_msg chm;
    memset(&chm, 0, sizeof chm);
    vt_err e = vt_sign_read_secret_key(o->key_path, &L.kp);
    if (!e) e = vt_transcript_open(path, &L.tr);
    if (!e) vt_conn_set_transcript(L.ca, L.tr);
    if (!e) e = vt_recv_msg(L.ca, VT_MSG_CHALLENGE, o->deadline_ms, NULL, &chm);
    double t0 = vt_now();
    if (!e) {
        const vt_msg_challenge *ch = &chm.body.challenge;
        snprintf(L.trainer_addr, sizeof L.trainer_addr, "%s", ch->trainer_addr);
        memcpy(L.trainer_pk, ch->commitment + 80, 32); /* the commitment's key is the trainer's identity */
        if (connect_trainer(&L) && !o->quiet)
            fprintf(stderr, "arbiter: cannot reach the trainer at %s: %s\n", L.trainer_addr, vt_errmsg());
        vt_game_io io = {live_ask, &L, live_note};
        vt_game_play(&io, ch, o->data_root, o->order, &res);
        if (L.ca && vt_send_msg(L.ca, VT_MSG_VERDICT, &res.v, &L.kp) && !o->quiet)
            fprintf(stderr, "arbiter: could not deliver the verdict to the auditor\n");
        if (L.ct && vt_send_msg(L.ct, VT_MSG_VERDICT, &res.v, &L.kp)) { /* the trainer may be gone */ }
        if (!o->quiet) {
            static const char *const who[] = {"nobody", "the trainer", "the auditor", "both parties"};
            fprintf(stderr, "arbiter: verdict against %s (%s) at step %llu, operation %u: %s\n", who[res.v.loser & 3],
                    vt_reason_name(res.v.reason_code), (unsigned long long)res.v.step, res.v.op, res.v.reason);
            fprintf(stderr, "arbiter: %llu rounds (%llu over steps, %llu over operations), %.6f s recomputing, %.6f s "
                    "hashing, %llu bytes received, game %.3f s, one step %.6f s; transcript %s\n",
                    (unsigned long long)res.rounds, (unsigned long long)res.step_rounds,
                    (unsigned long long)res.op_rounds, res.recompute_seconds, res.hash_seconds,
                    (unsigned long long)L.bytes, vt_now() - t0, res.step_seconds, path);
        }
    } else if (!o->quiet) {
        fprintf(stderr, "arbiter: no valid challenge: %s\n", vt_errmsg());
    }
    vt_msg_free(&chm);
    vt_conn_close(L.ct);
    vt_conn_close(L.ca);
    if (vt_transcript_close(L.tr) && !o->quiet) fprintf(stderr, "arbiter: transcript %s: %s\n", path, vt_errmsg());
    vt_keypair_wipe(&L.kp);
    free(job);
    return NULL;
}

vt_err vt_arbiter_serve(const vt_arbiter_opts *o)
{
    vt_keypair kp;
    vt_listener *l = NULL;
    uint16_t port = 0;
    VT_FORWARD_IF_ERROR(vt_sign_init());
    VT_FORWARD_IF_ERROR(vt_sign_read_secret_key(o->key_path, &kp));
    vt_err e = vt_listen(o->listen, &l, &port);
    if (!e && o->port_file) { /* atomically: a reader polling for the file never sees half of it */
        char num[16];
        int k = snprintf(num, sizeof num, "%u\n", (unsigned)port);
        e = vt_write_file_atomic(o->port_file, num, (size_t)k);
    }
    if (!e && !o->quiet) fprintf(stderr, "arbiter: listening on port %u\n", port);
    pthread_t th[64];
    int n = 0;
    for (int id = 0; !e && (o->max_games <= 0 || id < o->max_games);) {
        vt_conn *c = NULL;
        if (vt_accept(l, &kp, NULL, 10000, &c, NULL) != VT_OK) continue;
        game_job *job = calloc(1, sizeof *job);
        if (!job) {
            vt_conn_close(c);
            continue;
        }
        job->o = o, job->ca = c, job->id = id++;
        if (o->max_games > 0 && n < 64) { /* bounded: joinable, so the last verdict is out before we return */
            if (pthread_create(&th[n], NULL, game_main, job) == 0) {
                n++;
                continue;
            }
        } else {
            pthread_t t;
            if (pthread_create(&t, NULL, game_main, job) == 0) {
                pthread_detach(t);
                continue;
            }
        }
        game_main(job);
    }
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    vt_listener_close(l);
    vt_keypair_wipe(&kp);
    return e;
}

/* ------------------------------------------------------------------ check */

typedef struct {
    vt_transcript_reader *r;
    vt_transcript_record rec;
    int have, eof;
    uint8_t arbiter_pk[32], trainer_pk[32], auditor_pk[32];
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

static vt_err replay_ask(void *ctx, int party, int qtype, const void *q, int atype, vt_msg *ans)
{
    replay *R = ctx;
    /* the arbiter's question, exactly as the engine would ask it now */
    VT_RETURN_ERROR_IF(!peek(R) || R->rec.dir != VT_TR_SENT, VT_ERR_FORMAT,
                       "transcript: the recorded game does not ask %s here", vt_msg_type_name(qtype));
    vt_msg m;
    vt_err e = vt_msg_decode(R->rec.bytes, R->rec.len, R->arbiter_pk, NULL, &m);
    R->have = 0;
    VT_RETURN_ERROR_IF(e, VT_ERR_FORMAT, "transcript: a question is not signed by the arbiter: %s", vt_errmsg());
    vt_buf want, got;
    vt_buf_init(&want);
    vt_buf_init(&got);
    e = vt_msg_body_encode(qtype, q, &want);
    if (!e) e = vt_msg_body_encode(m.hdr.type, &m.body, &got);
    int same = !e && m.hdr.type == qtype && want.len == got.len && memcmp(want.data, got.data, want.len) == 0;
    vt_buf_free(&got);
    vt_msg_free(&m);
    if (!same) vt_buf_free(&want);
    VT_RETURN_ERROR_IF(!same, VT_ERR_FORMAT, "transcript: the recorded question differs from %s",
                       vt_msg_type_name(qtype));
    /* the same question sent again after a reconnection: skip the repeats */
    while (peek(R) && R->rec.dir == VT_TR_SENT) {
        vt_msg r2;
        vt_buf b2;
        vt_buf_init(&b2);
        int repeat = vt_msg_decode(R->rec.bytes, R->rec.len, R->arbiter_pk, NULL, &r2) == VT_OK;
        if (repeat) {
            repeat = r2.hdr.type == qtype && vt_msg_body_encode(r2.hdr.type, &r2.body, &b2) == VT_OK &&
                     b2.len == want.len && memcmp(b2.data, want.data, want.len) == 0;
            vt_msg_free(&r2);
        }
        vt_buf_free(&b2);
        if (!repeat) break;
        R->have = 0;
    }
    vt_buf_free(&want);
    /* the party's answer, if any was recorded */
    const uint8_t *pk = party == VT_ROLE_TRAINER ? R->trainer_pk : R->auditor_pk;
    if (!peek(R) || R->rec.dir != VT_TR_RECV || memcmp(R->rec.author_pk, pk, 32) != 0)
        VT_RETURN_ERROR(VT_ERR_IO, "no answer was recorded (the party missed its deadline or sent an invalid message)");
    e = vt_msg_decode(R->rec.bytes, R->rec.len, pk, NULL, ans);
    R->have = 0;
    VT_RETURN_ERROR_IF(e, VT_ERR_CRYPTO, "transcript: an answer does not verify: %s", vt_errmsg());
    VT_RETURN_ERROR_IF(ans->hdr.type != atype && ans->hdr.type != VT_MSG_ERROR, VT_ERR_FORMAT,
                       "transcript: an answer has the wrong type");
    return VT_OK;
}

vt_err vt_arbiter_check(const char *path, const char *data_root, vt_order order, vt_game_result *res, int *matches)
{
    replay R;
    memset(&R, 0, sizeof R);
    *matches = 0;
    memset(res, 0, sizeof *res);
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
    }
    if (!e) {
        memcpy(R.trainer_pk, ch.body.challenge.commitment + 80, 32);
        /* the arbiter's key: the author of the first record it sent */
        vt_transcript_reader *r2 = NULL;
        vt_transcript_record rr;
        int eof = 0;
        e = vt_transcript_reader_open(path, &r2);
        while (!e && !eof) {
            e = vt_transcript_next(r2, &rr, &eof);
            if (!e && !eof && rr.dir == VT_TR_SENT) {
                memcpy(R.arbiter_pk, rr.author_pk, 32);
                break;
            }
        }
        vt_transcript_reader_close(r2);
    }
    if (!e) {
        vt_game_io io = {replay_ask, &R, NULL};
        vt_game_play(&io, &ch.body.challenge, data_root, order, res);
        /* the recorded verdict follows */
        int found = 0;
        while (peek(&R)) {
            vt_msg v;
            R.have = 0;
            if (R.rec.dir != VT_TR_SENT || vt_msg_decode(R.rec.bytes, R.rec.len, R.arbiter_pk, NULL, &v)) continue;
            if (v.hdr.type == VT_MSG_VERDICT) {
                const vt_msg_verdict *a = &v.body.verdict, *b = &res->v;
                found = 1;
                *matches = a->loser == b->loser && a->reason_code == b->reason_code && a->step == b->step &&
                           a->op == b->op && memcmp(a->commitment_hash, b->commitment_hash, 32) == 0;
            }
            vt_msg_free(&v);
            if (found) break;
        }
        if (R.err) e = R.err;
        else if (!found) e = vt_set_error(VT_ERR_FORMAT, "transcript %s holds no verdict", path);
    }
    vt_msg_free(&ch);
    vt_transcript_reader_close(R.r);
    return e;
}
