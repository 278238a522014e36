/* vt_arbiter.c - the arbiter's service and its offline transcript check. */
#include "vt_arbiter.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/vt_bytes.h"
#include "../common/vt_cli.h"
#include "../common/vt_hash.h"
#include "../merkle/vt_sign.h"
#include "../protocol/vt_proto.h"

/* ------------------------------------------------------------------ live */

/* Clocks (docs/dispute.md "Clocks"): every wait for a party - each connection attempt, the
 * pause before the next one, each question until its answer - is charged to that party's
 * clock; a question may wait at most min(deadline, what is left of the clock). An unreachable
 * trainer is retried (pauses of 200 ms doubling to 2 s) until its clock runs out. Every attempt
 * and every missing answer is recorded, signed by the arbiter, in the transcript (NOTE). */

typedef struct {
    const vt_arbiter_opts *o;
    const vt_keypair *kp;
    vt_conn *ct, *ca; /* trainer, auditor */
    vt_transcript *tr;
    char trainer_addr[VT_MSG_ADDR_MAX + 1];
    int have_endpoint;
    uint8_t trainer_pk[32];
    int64_t used_ms[4];   /* per party (VT_ROLE_*) */
    int64_t credit_ms[4]; /* per party: the work allowances credited to its clock (vt_ask_bounds) */
    double t0;
    uint32_t attempts, reconnects, note_seq, local_failures;
    int64_t busy_pause_ms; /* the pause before asking again after the trainer's ERROR busy */
    uint64_t bytes;
} live;

static int64_t ms_since(double t) { return (int64_t)((vt_now() - t) * 1000.0 + 0.5); }

static void put_note(live *L, vt_msg_note *nt)
{
    for (char *c = nt->text; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) *c = '?';
    vt_buf b;
    vt_buf_init(&b);
    vt_err e = vt_msg_encode(VT_MSG_NOTE, nt, L->note_seq++, L->kp, &b);
    if (!e) e = vt_transcript_append(L->tr, VT_TR_NOTE, L->kp->pk, b.data, b.len);
    if (e && !L->o->quiet) fprintf(stderr, "arbiter: cannot record a note in the transcript: %s\n", vt_errmsg());
    vt_buf_free(&b);
}

static void record_note(live *L, int kind, int party, int code, uint32_t n, int64_t at, int64_t el, const char *fmt, ...)
{
    vt_msg_note nt;
    memset(&nt, 0, sizeof nt);
    nt.kind = (uint8_t)kind, nt.party = (uint8_t)party, nt.code = (uint16_t)code, nt.n = n;
    nt.v[0] = (uint64_t)at, nt.v[1] = (uint64_t)el, nt.v[2] = (uint64_t)L->used_ms[party & 3],
    nt.v[3] = (uint64_t)L->o->clock_ms;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(nt.text, sizeof nt.text, fmt, ap);
    va_end(ap);
    put_note(L, &nt);
}

static int64_t clock_left(const live *L, int party)
{
    return (int64_t)L->o->clock_ms + L->credit_ms[party] - L->used_ms[party];
}

/* An ERROR by which the trainer's server ended a session rather than refused a question: idle too
 * long, evicted for a newer session, no session free, or its own failure. It says nothing about
 * the run: the arbiter reconnects and asks again (within the trainer's clock). */
static int session_error(const vt_msg *m)
{
    if (m->hdr.type != VT_MSG_ERROR) return 0;
    int c = m->body.error.code;
    return c == VT_ERRC_TIMEOUT || c == VT_ERRC_BUSY || c == VT_ERRC_INTERNAL;
}

/* Connects to the trainer's signed address, retrying within its clock. */
static vt_err connect_trainer(live *L)
{
    VT_RETURN_ERROR_IF(!L->have_endpoint, VT_ERR_INTERNAL, "no verified trainer address");
    int64_t pause = 200;
    for (;;) {
        int64_t left = clock_left(L, VT_ROLE_TRAINER);
        VT_RETURN_ERROR_IF(left <= 0, VT_ERR_IO, "the trainer at %s was unreachable for its whole clock (%d ms, %u attempts)",
                           L->trainer_addr, L->o->clock_ms, L->attempts);
        int dl = (int)(left < L->o->deadline_ms ? left : L->o->deadline_ms);
        double t = vt_now();
        int64_t at = ms_since(L->t0);
        vt_err e = vt_connect(L->trainer_addr, L->kp, L->trainer_pk, dl, &L->ct, NULL);
        int64_t el = ms_since(t);
        int local = e == VT_ERR_INTERNAL; /* the arbiter's own resources: not charged to the trainer */
        if (!local) L->used_ms[VT_ROLE_TRAINER] += el;
        L->attempts++;
        char why[512];
        snprintf(why, sizeof why, "%s", e ? vt_errmsg() : "");
        record_note(L, VT_NOTE_CONNECT, VT_ROLE_TRAINER, e ? (local ? 2 : 1) : 0, L->attempts, at, el, "%s%s%s",
                    L->trainer_addr, e ? ": " : "", why);
        if (local) {
            VT_RETURN_ERROR_IF(++L->local_failures > 25, VT_ERR_INTERNAL,
                               "the arbiter lacks its own resources to reach the trainer: %s", why);
            struct timespec ts = {0, 200000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        if (!e) {
            vt_conn_set_transcript(L->ct, L->tr);
            return VT_OK;
        }
        if (!L->o->quiet) fprintf(stderr, "arbiter: attempt %u to reach the trainer at %s: %s\n", L->attempts,
                                  L->trainer_addr, why);
        left = clock_left(L, VT_ROLE_TRAINER);
        if (left <= 0) continue;
        int64_t p = pause < left ? pause : left;
        struct timespec ts = {(time_t)(p / 1000), (long)(p % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        L->used_ms[VT_ROLE_TRAINER] += p;
        pause = pause * 2 > 2000 ? 2000 : pause * 2;
    }
}

static void heartbeat(live *L, int qtype);

static vt_err live_ask(void *ctx, int party, int qtype, const void *q, int atype, const vt_ask_bounds *b, vt_msg *ans)
{
    live *L = ctx;
    const char *who = party == VT_ROLE_TRAINER ? "trainer" : "auditor";
    /* the answer's size from the game's computed needs, not the protocol maximum */
    vt_msg_limits lim;
    memset(&lim, 0, sizeof lim);
    if (atype > 0 && atype < VT_MSG_TYPE_COUNT_) lim.max_body[atype] = b->max_body;
    /* the computation the question requires: its time on top of the deadline, credited once */
    if (b->credit) L->credit_ms[party & 3] += b->work_ms;
    int64_t allowed = (int64_t)L->o->deadline_ms + (b->work_ms > 0 ? b->work_ms : 0);
    for (;;) {
        int64_t at = ms_since(L->t0);
        if (clock_left(L, party) <= 0) {
            record_note(L, VT_NOTE_NO_ANSWER, party, VT_NOANS_CLOCK, 0, at, 0, "the %s's clock (%d ms) ran out", who,
                        L->o->clock_ms);
            VT_RETURN_ERROR(VT_ERR_IO, "the %s's clock (%d ms) ran out", who, L->o->clock_ms);
        }
        if (party == VT_ROLE_TRAINER && !L->ct) {
            vt_err e = connect_trainer(L);
            if (e) {
                char why[600];
                snprintf(why, sizeof why, "%s", vt_errmsg());
                record_note(L, VT_NOTE_NO_ANSWER, party, e == VT_ERR_INTERNAL ? VT_NOANS_LOCAL : VT_NOANS_UNREACHABLE,
                            L->attempts, at, ms_since(L->t0) - at, "%s", why);
                return vt_set_error(e, "%s", why);
            }
        }
        vt_conn *c = party == VT_ROLE_TRAINER ? L->ct : L->ca;
        VT_RETURN_ERROR_IF(!c, VT_ERR_IO, "cannot reach the %s", who);
        int64_t left = clock_left(L, party);
        int64_t dl64 = left < allowed ? left : allowed;
        int dl = dl64 > INT32_MAX ? INT32_MAX : (int)dl64;
        double t = vt_now();
        vt_err e = vt_send_msg(c, qtype, q, L->kp);
        /* while the trainer computes (its deadline may be long: the work it was granted), the auditor
         * hears from the arbiter every VT_ARBITER_HEARTBEAT_MS (a NOTE it ignores, not in the
         * transcript), so that an honest auditor never gives up on a game that is going on */
        if (!e && party == VT_ROLE_TRAINER && L->ca) {
            int hb = L->o->heartbeat_ms > 0 ? L->o->heartbeat_ms : VT_ARBITER_HEARTBEAT_MS;
            while (dl > hb && !vt_conn_wait_readable(c, hb)) {
                dl -= hb;
                heartbeat(L, qtype);
            }
        }
        if (!e) e = vt_recv_msg(c, atype, dl, &lim, ans);
        int64_t el = ms_since(t);
        L->used_ms[party] += el;
        if (!e && party == VT_ROLE_TRAINER && session_error(ans)) {
            /* the trainer's server closed this session (idle, evicted, busy): never an answer. Reconnect
             * and ask again; such reconnects count against the limit only while no answer comes. */
            int busy_code = ans->body.error.code == VT_ERRC_BUSY;
            char why[VT_MSG_TEXT_MAX + 64];
            snprintf(why, sizeof why, "the trainer's server ended the session (ERROR %u: %s)",
                     (unsigned)ans->body.error.code, ans->body.error.message);
            vt_msg_free(ans);
            record_note(L, VT_NOTE_CONNECT, VT_ROLE_TRAINER, 3, L->attempts, ms_since(L->t0), el, "%s: %s",
                        L->trainer_addr, why);
            if (!L->o->quiet) fprintf(stderr, "arbiter: %s; reconnecting\n", why);
            vt_conn_close(L->ct);
            L->ct = NULL;
            if (busy_code) { /* a limit of the trainer's that frees with time: wait, on its clock, unbounded in count */
                int64_t p = clock_left(L, party);
                p = p < L->busy_pause_ms ? p : L->busy_pause_ms;
                if (p > 0) {
                    struct timespec ts = {(time_t)(p / 1000), (long)(p % 1000) * 1000000L};
                    nanosleep(&ts, NULL);
                    L->used_ms[party] += p;
                }
                L->busy_pause_ms = L->busy_pause_ms * 2 > 5000 ? 5000 : L->busy_pause_ms * 2;
                if (clock_left(L, party) > 0) continue;
            } else if (++L->reconnects <= 8 && clock_left(L, party) > 0) {
                continue;
            }
            record_note(L, VT_NOTE_NO_ANSWER, party, VT_NOANS_LOST, 0, at, el, "%s to %s: %s", who,
                        vt_msg_type_name(qtype), why);
            VT_RETURN_ERROR(VT_ERR_IO, "%s%s", why, busy_code ? ", until its clock ran out" : ", 8 times without an answer");
        }
        if (!e) {
            if (party == VT_ROLE_TRAINER) L->reconnects = 0, L->busy_pause_ms = 500; /* an answer: progress */
            L->bytes += ans->raw_len;
            return VT_OK;
        }
        int deadline = vt_proto_deadline_exceeded();
        char why[600];
        snprintf(why, sizeof why, "%s", vt_errmsg());
        /* A dropped connection to the trainer (not a deadline, not a bad message): reconnect within its clock
         * and ask again. Every answer is a function of the commitment, so nothing established is lost. */
        int dropped = !deadline && e == VT_ERR_IO;
        if (party == VT_ROLE_TRAINER && dropped && L->reconnects < 8 && clock_left(L, party) > 0) {
            vt_conn_close(L->ct);
            L->ct = NULL;
            L->reconnects++;
            continue;
        }
        int code = deadline ? (dl64 < allowed ? VT_NOANS_CLOCK : VT_NOANS_DEADLINE)
                   : dropped ? VT_NOANS_LOST
                             : VT_NOANS_INVALID;
        record_note(L, VT_NOTE_NO_ANSWER, party, code, 0, at, el, "%s to %s: %s", who, vt_msg_type_name(qtype), why);
        return vt_set_error(e, "%s", why);
    }
}

/* A NOTE to the auditor: the game goes on, the arbiter waits for the trainer. Best effort. */
static void heartbeat(live *L, int qtype)
{
    vt_msg_note nt;
    memset(&nt, 0, sizeof nt);
    nt.kind = VT_NOTE_NO_ANSWER, nt.party = VT_ROLE_TRAINER;
    nt.v[0] = (uint64_t)ms_since(L->t0), nt.v[2] = (uint64_t)L->used_ms[VT_ROLE_TRAINER];
    nt.v[3] = (uint64_t)clock_left(L, VT_ROLE_TRAINER);
    snprintf(nt.text, sizeof nt.text, "waiting for the trainer's answer to %s", vt_msg_type_name(qtype));
    vt_conn_set_transcript(L->ca, NULL);
    if (vt_send_msg(L->ca, VT_MSG_NOTE, &nt, L->kp)) { /* the auditor may be gone: its next question says so */ }
    vt_conn_set_transcript(L->ca, L->tr);
}

static void live_note(void *ctx, const char *line)
{
    live *L = ctx;
    if (!L->o->quiet) fprintf(stderr, "arbiter: %s\n", line);
}

static void live_endpoint(void *ctx, const char *addr)
{
    live *L = ctx;
    snprintf(L->trainer_addr, sizeof L->trainer_addr, "%s", addr);
    L->have_endpoint = 1;
}

typedef struct server server;

typedef struct {
    server *S;
    vt_conn *ca;
    vt_msg chm; /* the auditor's CHALLENGE (signature verified by the gate) */
    char ip[64], peer[80];
    int id, slot; /* slot: its entry in server.games */
    uint64_t time; /* seconds since 1970 when the challenge was taken (the verdict names it) */
} game_job;

/* A running game, for the admission rule: its commitment and auditor key. */
typedef struct {
    int used;
    uint8_t cm[32], auditor[32];
} game_slot;

struct server {
    const vt_arbiter_opts *o;
    vt_keypair kp;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int running, started;
    struct {
        char ip[64];
        int n;
    } per_ip[64];
    game_slot games[256];
    vt_game_arith arith; /* the GEMM arithmetics' weights, set once at start-up for every game */
};

static void game_done(server *S, const char *ip, int slot)
{
    pthread_mutex_lock(&S->mu);
    S->running--;
    if (slot >= 0 && slot < 256) S->games[slot].used = 0;
    for (int i = 0; i < 64; i++)
        if (S->per_ip[i].n && strcmp(S->per_ip[i].ip, ip) == 0) {
            S->per_ip[i].n--;
            break;
        }
    pthread_cond_broadcast(&S->cv);
    pthread_mutex_unlock(&S->mu);
}

static void *game_main(void *p)
{
    game_job *job = p;
    server *S = job->S;
    const vt_arbiter_opts *o = S->o;
    live L;
    memset(&L, 0, sizeof L);
    L.o = o;
    L.kp = &S->kp;
    L.ca = job->ca;
    L.t0 = vt_now();
    L.busy_pause_ms = 500;
    const vt_msg_challenge *ch = &job->chm.body.challenge;
    memcpy(L.trainer_pk, ch->commitment + 80, 32); /* the commitment's key is the trainer's identity */
    char path[4096];
    /* a new file for every game, never an earlier game's (an arbiter restarted within the same second
     * has another pid; a name taken anyway gets a suffix) */
    for (int k = 0; k < 1000; k++) {
        int n = snprintf(path, sizeof path, "%s/game-%lld-%ld-%d", o->transcript_dir ? o->transcript_dir : ".",
                         (long long)time(NULL), (long)getpid(), job->id);
        if (k && n > 0 && (size_t)n < sizeof path) snprintf(path + n, sizeof path - (size_t)n, "-%d", k);
        size_t l = strlen(path);
        if (l + 6 < sizeof path) memcpy(path + l, ".vttr", 6);
        if (access(path, F_OK) != 0) break;
    }
    vt_game_result res;
    memset(&res, 0, sizeof res);
    vt_game_limits lim = {(uint64_t)o->max_game_mb << 20, (uint64_t)o->max_op_mflop * 1000000ull,
                          o->min_mflops > 0 ? (double)o->min_mflops * 1e6 : VT_GAME_MIN_RATE,
                          o->max_work_s > 0 ? (uint64_t)o->max_work_s * 1000u : 0, {0}};
    /* the transcript starts with the challenge (as received), then the game's limits */
    vt_err e = vt_transcript_open(path, &L.tr);
    if (!e) e = vt_transcript_append(L.tr, VT_TR_RECV, vt_conn_peer_pk(L.ca), job->chm.raw, job->chm.raw_len);
    if (!e) {
        vt_msg_note gn;
        memset(&gn, 0, sizeof gn);
        gn.kind = VT_NOTE_GAME;
        gn.v[0] = (uint64_t)o->deadline_ms, gn.v[1] = (uint64_t)o->clock_ms, gn.v[2] = lim.max_game_bytes,
        gn.v[3] = lim.max_op_flop;
        gn.code = (uint16_t)(lim.min_rate / 1e6), gn.n = (uint32_t)(lim.max_work_ms / 1000u); /* the clocks' work terms */
        snprintf(gn.text, sizeof gn.text, "deadline %d ms per answer, clock %d ms per party, each plus the time of the "
                 "recomputation a question needs at %.0f Mflop/s (at most %u s a game); at most %d MB and %d Mflop per "
                 "game", o->deadline_ms, o->clock_ms, lim.min_rate / 1e6, (unsigned)gn.n, o->max_game_mb,
                 o->max_op_mflop);
        put_note(&L, &gn);
        for (int v = 1; v < S->arith.n_modes; v++) { /* the weights, recorded, and read back as the check will */
            vt_game_arith_note(&S->arith, v, &gn);
            put_note(&L, &gn);
            if (vt_game_arith_from_note(&gn, &lim)) lim.arith_factor[v] = S->arith.factor[v];
        }
        vt_conn_set_transcript(L.ca, L.tr);
        /* the verdict names the arbiter's key and the time it took the challenge */
        vt_game_io io = {live_ask, &L, live_note, live_endpoint, S->kp.pk, job->time};
        vt_game_play(&io, ch, o->data_root, o->order, &lim, &res);
        if (vt_send_msg(L.ca, VT_MSG_VERDICT, &res.v, &S->kp) && !o->quiet)
            fprintf(stderr, "arbiter: could not deliver the verdict to the auditor\n");
        if (L.ct && vt_send_msg(L.ct, VT_MSG_VERDICT, &res.v, &S->kp)) { /* the trainer may be gone */ }
        if (!o->quiet) {
            static const char *const who[] = {"nobody", "the trainer", "the auditor", "both parties"};
            fprintf(stderr, "arbiter: verdict against %s (%s) at step %llu, operation %u: %s\n", who[res.v.loser & 3],
                    vt_reason_name(res.v.reason_code), (unsigned long long)res.v.step, res.v.op, res.v.reason);
            fprintf(stderr, "arbiter: %llu rounds (%llu over steps, %llu over operations), %.6f s recomputing, %.6f s "
                    "hashing, %llu bytes received, game %.3f s, one step %.6f s; clocks used: trainer %lld ms, auditor "
                    "%lld ms; transcript %s\n",
                    (unsigned long long)res.rounds, (unsigned long long)res.step_rounds,
                    (unsigned long long)res.op_rounds, res.recompute_seconds, res.hash_seconds,
                    (unsigned long long)L.bytes, vt_now() - L.t0, res.step_seconds,
                    (long long)L.used_ms[VT_ROLE_TRAINER], (long long)L.used_ms[VT_ROLE_AUDITOR], path);
        }
    } else {
        fprintf(stderr, "arbiter: game from %s not played: transcript %s: %s\n", job->peer, path, vt_errmsg());
        vt_conn_refuse(L.ca, &S->kp, VT_ERRC_INTERNAL, "the arbiter cannot record the game");
        L.ca = NULL;
    }
    vt_conn_close(L.ct);
    vt_conn_close(L.ca);
    if (vt_transcript_close(L.tr) && !o->quiet) fprintf(stderr, "arbiter: transcript %s: %s\n", path, vt_errmsg());
    vt_msg_free(&job->chm);
    game_done(S, job->ip, job->slot);
    free(job);
    return NULL;
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
    int stop = S->o->max_games > 0 && S->started >= S->o->max_games;
    pthread_mutex_unlock(&S->mu);
    return stop;
}

/* An authenticated client with a signed CHALLENGE: cheap checks, limits, then a game thread. */
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
    /* The admission rule (docs/dispute.md "Access control and limits"): at most --max-running games,
     * --games-per-ip from one address, --games-per-commitment about one run and one per auditor key,
     * so that games against one run, however many keys they come under, leave room for the others */
    uint8_t cm[32];
    vt_commitment_bytes_hash(ch->commitment, cm);
    pthread_mutex_lock(&S->mu);
    int slot = -1, free_slot = -1, gslot = -1, same_cm = 0, same_key = 0;
    for (int i = 0; i < 64; i++) {
        if (S->per_ip[i].n && strcmp(S->per_ip[i].ip, p->ip) == 0) slot = i;
        if (!S->per_ip[i].n && free_slot < 0) free_slot = i;
    }
    for (int i = 0; i < 256; i++) {
        if (!S->games[i].used) {
            if (gslot < 0) gslot = i;
            continue;
        }
        same_cm += memcmp(S->games[i].cm, cm, 32) == 0;
        same_key += memcmp(S->games[i].auditor, ch->auditor_pk, 32) == 0;
    }
    int per_cm = S->o->games_per_commitment > 0 ? S->o->games_per_commitment : 2;
    const char *busy = NULL;
    if (S->running >= S->o->max_running || gslot < 0)
        busy = "busy: as many games as this arbiter plays at once are running; try again later";
    else if (slot >= 0 ? S->per_ip[slot].n >= S->o->games_per_ip : free_slot < 0)
        busy = "busy: as many games as this arbiter plays for one address are running; try again later";
    else if (same_cm >= per_cm)
        busy = "busy: as many games as this arbiter plays about one commitment are running; try again later";
    else if (same_key)
        busy = "busy: a game of this auditor key is running; try again later";
    else if (S->o->max_games > 0 && S->started >= S->o->max_games)
        busy = "this arbiter plays no more games";
    if (!busy) {
        if (slot < 0) {
            slot = free_slot;
            snprintf(S->per_ip[slot].ip, sizeof S->per_ip[slot].ip, "%s", p->ip);
        }
        S->per_ip[slot].n++;
        S->running++;
        S->games[gslot].used = 1;
        memcpy(S->games[gslot].cm, cm, 32);
        memcpy(S->games[gslot].auditor, ch->auditor_pk, 32);
    }
    int id = busy ? 0 : S->started++;
    pthread_mutex_unlock(&S->mu);
    if (busy) {
        arb_reject(S, p->peer, VT_ERRC_BUSY, busy);
        vt_conn_refuse(p->c, &S->kp, VT_ERRC_BUSY, busy);
        return;
    }
    game_job *job = calloc(1, sizeof *job);
    pthread_t th;
    pthread_attr_t at;
    int ok = job != NULL && pthread_attr_init(&at) == 0;
    if (ok) {
        job->S = S, job->ca = p->c, job->chm = *p->first, job->id = id, job->slot = gslot, job->time = (uint64_t)time(NULL);
        memset(p->first, 0, sizeof *p->first); /* moved */
        snprintf(job->ip, sizeof job->ip, "%s", p->ip);
        snprintf(job->peer, sizeof job->peer, "%s", p->peer);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        ok = pthread_create(&th, &at, game_main, job) == 0;
        pthread_attr_destroy(&at);
        if (!ok) {
            *p->first = job->chm; /* back to the gate, which frees it */
            free(job);
        }
    } else {
        free(job);
    }
    if (!ok) {
        arb_reject(S, p->peer, VT_ERRC_INTERNAL, "cannot start a game thread");
        vt_conn_refuse(p->c, &S->kp, VT_ERRC_INTERNAL, "the arbiter cannot start a game now");
        game_done(S, p->ip, gslot);
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
    /* the games still running finish (their verdicts and transcripts go out) before we return */
    pthread_mutex_lock(&S.mu);
    while (S.running > 0) pthread_cond_wait(&S.cv, &S.mu);
    pthread_mutex_unlock(&S.mu);
    vt_listener_close(l);
    vt_keypair_wipe(&S.kp);
    pthread_cond_destroy(&S.cv);
    pthread_mutex_destroy(&S.mu);
    return e;
}

/* ------------------------------------------------------------------ check */

typedef struct {
    vt_transcript_reader *r;
    vt_transcript_record rec;
    int have, eof;
    uint8_t arbiter_pk[32], trainer_pk[32], auditor_pk[32];
    char endpoint[VT_MSG_ADDR_MAX + 1];
    uint32_t attempts, failed;
    char *rests, rests_buf[1200];
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
    snprintf(R->rests_buf, sizeof R->rests_buf,
             "the arbiter's signed account (NOTE records, no party's signature): %.700s; %u connection attempts to %s, %u "
             "failed; the party's clock used %llu of %llu ms",
             nt->text, R->attempts, R->endpoint[0] ? R->endpoint : "-", R->failed, (unsigned long long)nt->v[2],
             (unsigned long long)nt->v[3]);
    R->rests = R->rests_buf;
    VT_RETURN_ERROR(nt->code == VT_NOANS_LOCAL ? VT_ERR_INTERNAL : VT_ERR_IO, "%.900s (recorded by the arbiter)", nt->text);
}

/* The next record is the trainer's ERROR ending a session (session_error): the arbiter reconnected. */
static int session_end_record(replay *R, int party)
{
    if (party != VT_ROLE_TRAINER || !peek(R) || R->rec.dir != VT_TR_RECV || memcmp(R->rec.author_pk, R->trainer_pk, 32) != 0)
        return 0;
    vt_msg m;
    if (vt_msg_decode(R->rec.bytes, R->rec.len, R->trainer_pk, NULL, &m) != VT_OK) return 0;
    int se = session_error(&m);
    vt_msg_free(&m);
    return se;
}

static vt_err replay_ask(void *ctx, int party, int qtype, const void *q, int atype, const vt_ask_bounds *b, vt_msg *ans)
{
    replay *R = ctx;
    (void)b; /* the recorded answers passed the live limits; timing is the arbiter's signed account */
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

static void replay_endpoint(void *ctx, const char *addr)
{
    replay *R = ctx;
    snprintf(R->endpoint, sizeof R->endpoint, "%s", addr);
}

/* The arbiter's key (the author of every record it wrote: one key) and the verdict it recorded. */
static vt_err scan_arbiter(const char *path, uint8_t arbiter_pk[32], vt_msg_verdict *v, int *have_v)
{
    vt_transcript_reader *r = NULL;
    vt_transcript_record rr;
    int eof = 0, have_pk = 0;
    *have_v = 0;
    vt_err e = vt_transcript_reader_open(path, &r);
    while (!e && !eof) {
        e = vt_transcript_next(r, &rr, &eof);
        if (e || eof || (rr.dir != VT_TR_SENT && rr.dir != VT_TR_NOTE)) continue;
        if (!have_pk) memcpy(arbiter_pk, rr.author_pk, 32), have_pk = 1;
        if (memcmp(rr.author_pk, arbiter_pk, 32) != 0) {
            e = vt_set_error(VT_ERR_CRYPTO, "transcript: the record at offset %llu is signed by another arbiter key than "
                             "the first one", (unsigned long long)rr.offset);
            break;
        }
        vt_msg m;
        if (!*have_v && rr.dir == VT_TR_SENT && vt_msg_decode(rr.bytes, rr.len, arbiter_pk, NULL, &m) == VT_OK) {
            if (m.hdr.type == VT_MSG_VERDICT) *v = m.body.verdict, *have_v = 1;
            vt_msg_free(&m);
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
    int have_rv = 0;
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
        e = scan_arbiter(path, R.arbiter_pk, &rv, &have_rv);
        if (!e) memcpy(rep->arbiter_pk, R.arbiter_pk, 32);
        if (!e && !have_rv) e = vt_set_error(VT_ERR_FORMAT, "transcript %s holds no verdict", path);
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
        vt_game_io io = {replay_ask, &R, NULL, replay_endpoint, R.arbiter_pk, rv.time}; /* the game's identity, as recorded */
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
        if (memcmp(rv.arbiter_pk, R.arbiter_pk, 32) != 0) {
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
