/* vt_arbiter_admit.c - the arbiter's admission (docs/dispute.md "Access control and limits"):
 * `arbiter serve`, the gate's callbacks, the admission rule, the queue of challenges waiting for a
 * slot, the auditor's resumption by its CHALLENGE's bytes, and the end of a game. */
#include "vt_arbiter.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/vt_bytes.h"
#include "../common/vt_cli.h"
#include "../common/vt_hash.h"
#include "../merkle/vt_sign.h"
#include "../protocol/vt_proto.h"
#include "vt_arbiter_int.h"

/* ------------------------------------------------------------------ admission */

int vti_arbiter_waiting_for(server *S, const uint8_t cm[32])
{
    for (int i = 0; i < VTI_WAITERS; i++)
        if (S->waiting[i].used && memcmp(S->waiting[i].cm, cm, 32) == 0) return 1;
    return 0;
}

static void start_waiters(server *S);

void vti_arbiter_game_done(server *S, const char *ip, int slot, const vt_msg_verdict *v)
{
    vt_conn *late = NULL;
    pthread_mutex_lock(&S->mu);
    S->running--;
    if (slot >= 0 && slot < 256) {
        game_slot *gs = &S->games[slot];
        if (v) {
            game_done_rec *d = &S->done[S->done_next];
            S->done_next = (S->done_next + 1) % VTI_DONE_KEPT;
            d->used = 1;
            memcpy(d->chid, gs->chid, 32);
            d->v = *v;
        }
        late = gs->resume; /* resumed as the game ended: it gets the verdict */
        memset(gs, 0, sizeof *gs);
    }
    for (int i = 0; i < 64; i++)
        if (S->per_ip[i].n && strcmp(S->per_ip[i].ip, ip) == 0) {
            S->per_ip[i].n--;
            break;
        }
    pthread_cond_broadcast(&S->cv);
    pthread_mutex_unlock(&S->mu);
    if (late) {
        if (v && vt_send_msg(late, VT_MSG_VERDICT, v, &S->kp)) { /* the auditor may be gone again */ }
        vt_conn_close(late);
    }
    start_waiters(S);
}

static void arb_reject(void *ctx, const char *peer, int code, const char *reason)
{
    (void)ctx;
    vt_log_rejection_code("arbiter", peer, code, reason);
}

static int arb_stop(void *ctx)
{
    server *S = ctx;
    pthread_mutex_lock(&S->mu);
    /* after the last game, the gate stays open while it runs: its auditor may resume it */
    int stop = S->o->max_games > 0 && S->started >= S->o->max_games && S->running == 0;
    pthread_mutex_unlock(&S->mu);
    return stop;
}

/* The admission rule (docs/dispute.md "Access control and limits"), under S->mu: at most
 * --max-running games, --games-per-ip from one address, --games-per-commitment about one run and one
 * per auditor key, so that games against one run, however many keys they come under, leave room for
 * the others. NULL when a game may start (*gslot its slot, *ipslot its address's entry), else why not;
 * *may_wait: 1 when the reason frees as games end (the run's or the arbiter's games), so that the
 * challenge waits for a slot, first come first served, instead of being refused. */
static const char *admission(server *S, const uint8_t cm[32], const uint8_t auditor[32], const char *ip, int *gslot,
                             int *ipslot, int *may_wait)
{
    int slot = -1, free_slot = -1, same_cm = 0, same_key = 0;
    *gslot = -1, *may_wait = 0;
    for (int i = 0; i < 64; i++) {
        if (S->per_ip[i].n && strcmp(S->per_ip[i].ip, ip) == 0) slot = i;
        if (!S->per_ip[i].n && free_slot < 0) free_slot = i;
    }
    for (int i = 0; i < 256; i++) {
        if (!S->games[i].used) {
            if (*gslot < 0) *gslot = i;
            continue;
        }
        same_cm += memcmp(S->games[i].cm, cm, 32) == 0;
        same_key += memcmp(S->games[i].auditor, auditor, 32) == 0;
    }
    int per_cm = S->o->games_per_commitment > 0 ? S->o->games_per_commitment : 2;
    *ipslot = slot >= 0 ? slot : free_slot;
    if (S->o->max_games > 0 && S->started >= S->o->max_games) return "this arbiter plays no more games";
    if (same_key) return "busy: a game of this auditor key is running; try again later";
    if (slot >= 0 ? S->per_ip[slot].n >= S->o->games_per_ip : free_slot < 0)
        return "busy: as many games as this arbiter plays for one address are running; try again later";
    *may_wait = 1;
    if (S->running >= S->o->max_running || *gslot < 0)
        return "busy: as many games as this arbiter plays at once are running; try again later";
    if (same_cm >= per_cm)
        return "busy: as many games as this arbiter plays about one commitment are running; try again later";
    *may_wait = 0;
    return NULL;
}

/* Starts a game thread for challenge *chm on connection c (both moved in on success: returns 0),
 * reserving its slot under S->mu first. */
static int launch(server *S, vt_conn *c, vt_msg *chm, const char *ip, const char *peer, const uint8_t chid[32])
{
    const vt_msg_challenge *ch = &chm->body.challenge;
    uint8_t cm[32];
    vt_commitment_bytes_hash(ch->commitment, cm);
    int gslot, ipslot, may_wait;
    pthread_mutex_lock(&S->mu);
    if (admission(S, cm, ch->auditor_pk, ip, &gslot, &ipslot, &may_wait)) {
        pthread_mutex_unlock(&S->mu);
        return -1;
    }
    if (!S->per_ip[ipslot].n) snprintf(S->per_ip[ipslot].ip, sizeof S->per_ip[ipslot].ip, "%s", ip);
    S->per_ip[ipslot].n++;
    S->running++;
    game_slot *gs = &S->games[gslot];
    memset(gs, 0, sizeof *gs);
    gs->used = 1, gs->ca = c;
    memcpy(gs->cm, cm, 32);
    memcpy(gs->auditor, ch->auditor_pk, 32);
    memcpy(gs->chid, chid, 32);
    int id = S->started++;
    pthread_mutex_unlock(&S->mu);
    game_job *job = calloc(1, sizeof *job);
    pthread_t th;
    pthread_attr_t at;
    int ok = job != NULL && pthread_attr_init(&at) == 0;
    if (ok) {
        job->S = S, job->ca = c, job->chm = *chm, job->id = id, job->slot = gslot, job->time = (uint64_t)time(NULL);
        snprintf(job->ip, sizeof job->ip, "%s", ip);
        snprintf(job->peer, sizeof job->peer, "%s", peer);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        ok = pthread_create(&th, &at, vti_arbiter_game_main, job) == 0;
        pthread_attr_destroy(&at);
    }
    if (ok) {
        memset(chm, 0, sizeof *chm); /* moved */
        return 0;
    }
    free(job);
    pthread_mutex_lock(&S->mu);
    S->games[gslot].ca = NULL;
    pthread_mutex_unlock(&S->mu);
    vti_arbiter_game_done(S, ip, gslot, NULL);
    return -2;
}

/* The oldest waiting challenges that fit now start (after a game ended). */
static void start_waiters(server *S)
{
    for (;;) {
        waiter w;
        int found = 0;
        pthread_mutex_lock(&S->mu);
        int best = -1;
        for (int i = 0; i < VTI_WAITERS; i++) {
            waiter *x = &S->waiting[i];
            int gslot, ipslot, may_wait;
            if (!x->used || (best >= 0 && S->waiting[best].seq < x->seq)) continue;
            if (!admission(S, x->cm, x->chm.body.challenge.auditor_pk, x->ip, &gslot, &ipslot, &may_wait)) best = i;
        }
        if (best >= 0) {
            w = S->waiting[best];
            memset(&S->waiting[best], 0, sizeof S->waiting[best]);
            found = 1;
        }
        pthread_mutex_unlock(&S->mu);
        if (!found) return;
        int r = launch(S, w.c, &w.chm, w.ip, w.peer, w.chid);
        if (r) {
            arb_reject(S, w.peer, VT_ERRC_BUSY, "a waiting challenge could not start its game");
            vt_conn_refuse(w.c, &S->kp, VT_ERRC_BUSY, "the arbiter cannot start a game now; try again");
            vt_msg_free(&w.chm);
        } else if (!S->o->quiet) {
            fprintf(stderr, "arbiter: the waiting challenge from %s starts its game\n", w.peer);
        }
    }
}

/* A CHALLENGE byte for byte the same as a running, waiting or finished game's (its auditor's
 * connection dropped): the running game takes the new connection (the old one is shut down), a
 * waiting one keeps its place with it, a finished one sends its verdict. Never a second game.
 * 1 when handled (c taken). */
static int resume(server *S, vt_conn *c, const uint8_t chid[32], const char *peer)
{
    vt_msg_verdict v;
    int kind = 0;
    vt_conn *old = NULL;
    pthread_mutex_lock(&S->mu);
    for (int i = 0; i < 256 && !kind; i++) {
        game_slot *gs = &S->games[i];
        if (!gs->used || memcmp(gs->chid, chid, 32) != 0) continue;
        old = gs->resume; /* an earlier resumption the game has not taken: replaced */
        gs->resume = c;
        if (gs->ca) vt_conn_shutdown(gs->ca); /* the game notices at once, if it still waits on it */
        kind = 1;
    }
    for (int i = 0; i < VTI_WAITERS && !kind; i++) {
        waiter *w = &S->waiting[i];
        if (!w->used || memcmp(w->chid, chid, 32) != 0) continue;
        old = w->c;
        w->c = c;
        kind = 2;
    }
    for (int i = 0; i < VTI_DONE_KEPT && !kind; i++)
        if (S->done[i].used && memcmp(S->done[i].chid, chid, 32) == 0) v = S->done[i].v, kind = 3;
    pthread_cond_broadcast(&S->cv);
    pthread_mutex_unlock(&S->mu);
    if (old) vt_conn_close(old);
    if (kind && !S->o->quiet)
        fprintf(stderr, "arbiter: %s resends its challenge: %s\n", peer,
                kind == 1 ? "its game resumes on the new connection" : kind == 2 ? "it keeps its place in the queue"
                                                                                  : "its game ended; the verdict is sent again");
    if (kind == 3) {
        vt_conn_set_send_timeout(c, 1000);
        if (vt_send_msg(c, VT_MSG_VERDICT, &v, &S->kp)) { /* the auditor may be gone */ }
        vt_conn_close(c);
    }
    return kind != 0;
}

/* An authenticated client with a signed CHALLENGE: a resumption, else cheap checks, limits, then a
 * game thread (or a place in the queue of its run). */
static void arb_admit(void *ctx, vt_gate_peer *p)
{
    server *S = ctx;
    const vt_msg_challenge *ch = &p->first->body.challenge;
    char why[VT_MSG_TEXT_MAX + 1];
    if (memcmp(ch->auditor_pk, vt_conn_peer_pk(p->c), 32) != 0) {
        arb_reject(S, p->peer, VT_ERRC_BAD_CHALLENGE, "the challenge names another auditor key than its connection's");
        vt_conn_refuse(p->c, &S->kp, VT_ERRC_BAD_CHALLENGE, "the challenge names another auditor key than its connection's");
        return;
    }
    uint8_t chid[32];
    if (vt_sha256(p->first->raw, p->first->raw_len, chid)) {
        vt_conn_refuse(p->c, &S->kp, VT_ERRC_INTERNAL, "the arbiter cannot hash the challenge");
        return;
    }
    if (resume(S, p->c, chid, p->peer)) return;
    vt_service sv;
    vt_msg_verdict v;
    if (vt_game_check_challenge(ch, S->kp.pk, (uint64_t)time(NULL), &sv, &v)) { /* a signed verdict against the auditor; nothing dialled, no file */
        snprintf(why, sizeof why, "invalid challenge, verdict against the auditor: %.900s", v.reason);
        arb_reject(S, p->peer, 0, why);
        vt_conn_set_send_timeout(p->c, 1000);
        if (vt_send_msg(p->c, VT_MSG_VERDICT, &v, &S->kp)) { /* the auditor may be gone */ }
        vt_conn_close(p->c);
        return;
    }
    uint8_t cm[32];
    vt_commitment_bytes_hash(ch->commitment, cm);
    int gslot, ipslot, may_wait;
    pthread_mutex_lock(&S->mu);
    const char *busy = admission(S, cm, ch->auditor_pk, p->ip, &gslot, &ipslot, &may_wait);
    if (busy && may_wait) { /* a place in the queue: first come, first served; a slow auditor of the run may be preempted */
        int free_w = -1, from_ip = 0, same_key = 0;
        for (int i = 0; i < VTI_WAITERS; i++) {
            waiter *w = &S->waiting[i];
            if (!w->used) {
                if (free_w < 0) free_w = i;
                continue;
            }
            from_ip += strcmp(w->ip, p->ip) == 0;
            same_key += memcmp(w->chm.body.challenge.auditor_pk, ch->auditor_pk, 32) == 0;
        }
        if (free_w >= 0 && from_ip < VTI_WAITERS_PER_IP && !same_key) {
            waiter *w = &S->waiting[free_w];
            w->used = 1, w->seq = ++S->wait_seq, w->c = p->c, w->chm = *p->first;
            memset(p->first, 0, sizeof *p->first); /* moved */
            memcpy(w->cm, cm, 32);
            memcpy(w->chid, chid, 32);
            snprintf(w->ip, sizeof w->ip, "%s", p->ip);
            snprintf(w->peer, sizeof w->peer, "%s", p->peer);
            pthread_cond_broadcast(&S->cv);
            pthread_mutex_unlock(&S->mu);
            if (!S->o->quiet) fprintf(stderr, "arbiter: the challenge from %s waits for a slot (%s)\n", p->peer, busy);
            return;
        }
    }
    pthread_mutex_unlock(&S->mu);
    if (busy) {
        arb_reject(S, p->peer, VT_ERRC_BUSY, busy);
        vt_conn_refuse(p->c, &S->kp, VT_ERRC_BUSY, busy);
        return;
    }
    int r = launch(S, p->c, p->first, p->ip, p->peer, chid);
    if (r == -1) { /* taken by another challenge meanwhile */
        arb_reject(S, p->peer, VT_ERRC_BUSY, "busy: no slot now; try again later");
        vt_conn_refuse(p->c, &S->kp, VT_ERRC_BUSY, "busy: no slot now; try again later");
    } else if (r) {
        arb_reject(S, p->peer, VT_ERRC_INTERNAL, "cannot start a game thread");
        vt_conn_refuse(p->c, &S->kp, VT_ERRC_INTERNAL, "the arbiter cannot start a game now");
    }
}

vt_err vt_arbiter_serve(const vt_arbiter_opts *o)
{
    server S;
    memset(&S, 0, sizeof S);
    S.o = o;
    vt_listener *l = NULL;
    uint16_t port = 0;
    /* the weight of a GEMM flop in each tc-* mode, measured once (or set by the operator) */
    VT_FORWARD_IF_ERROR(vt_game_arith_setup(o->tc_factor, o->no_calibrate, &S.arith));
    for (int v = 1; v < S.arith.n_modes && !o->quiet; v++) {
        vt_msg_note an;
        vt_game_arith_note(&S.arith, v, &an);
        fprintf(stderr, "arbiter: %s\n", an.text);
    }
    VT_FORWARD_IF_ERROR(vt_sign_init());
    VT_FORWARD_IF_ERROR(vt_sign_read_secret_key(o->key_path, &S.kp));
    pthread_mutex_init(&S.mu, NULL);
    pthread_cond_init(&S.cv, NULL);
    vt_err e = vt_listen(o->listen, &l, &port);
    if (!e && o->port_file) { /* atomically: a reader polling for the file never sees half of it */
        char num[16];
        int k = snprintf(num, sizeof num, "%u\n", (unsigned)port);
        e = vt_write_file_atomic(o->port_file, num, (size_t)k);
    }
    if (!e && !o->quiet) fprintf(stderr, "arbiter: listening on port %u\n", port);
    vt_gate_opts go = {o->max_pending, o->pending_per_ip, o->handshake_ms, o->challenge_ms, VT_MSG_CHALLENGE, 0, 0};
    vt_gate_cb cb = {arb_admit, arb_reject, arb_stop, &S};
    if (!e) e = vt_gate_run(l, &S.kp, &go, &cb);
    /* the games still running finish (their verdicts and transcripts go out) before we return;
     * challenges still waiting for a slot are told to go elsewhere */
    pthread_mutex_lock(&S.mu);
    while (S.running > 0) pthread_cond_wait(&S.cv, &S.mu);
    for (int i = 0; i < VTI_WAITERS; i++)
        if (S.waiting[i].used) {
            vt_conn_refuse(S.waiting[i].c, &S.kp, VT_ERRC_BUSY, "this arbiter plays no more games");
            vt_msg_free(&S.waiting[i].chm);
            S.waiting[i].used = 0;
        }
    pthread_mutex_unlock(&S.mu);
    vt_listener_close(l);
    vt_keypair_wipe(&S.kp);
    pthread_cond_destroy(&S.cv);
    pthread_mutex_destroy(&S.mu);
    return e;
}
