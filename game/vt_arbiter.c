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

typedef struct server server;

/* A running game, for the admission rule (its commitment and auditor key) and for the auditor's
 * resumption (docs/dispute.md "Connections are not parties"): the identity of its CHALLENGE (the
 * SHA-256 of its signed frame, which the auditor sends again, byte for byte, to resume), the
 * auditor's current connection, a resumed one handed over by arb_admit, and the auditor's used
 * clock (a waiting challenger of the same run may preempt a slow auditor). Under server.mu. */
typedef struct {
    int used;
    uint8_t cm[32], auditor[32], chid[32];
    vt_conn *ca;       /* the auditor's connection the game uses now (arb_admit shuts it down on a resume) */
    vt_conn *resume;   /* a resumed connection not yet taken by the game */
} game_slot;

/* A finished game: a CHALLENGE sent again gets its verdict, never a second game. */
typedef struct {
    int used;
    uint8_t chid[32];
    vt_msg_verdict v;
} game_done_rec;

/* A challenge waiting for a slot of its commitment (first come, first served). */
typedef struct {
    int used;
    uint64_t seq;
    uint8_t cm[32], chid[32]; /* its commitment; its CHALLENGE's id (the SHA-256 of its frame) */
    vt_conn *c;
    vt_msg chm;
    char ip[64], peer[80];
} waiter;

#define VTI_DONE_KEPT 64
#define VTI_WAITERS 64       /* challenges waiting in all */
#define VTI_WAITERS_PER_IP 4 /* of those, from one address */

typedef struct {
    const vt_arbiter_opts *o;
    const vt_keypair *kp;
    server *S;
    int slot;         /* its entry in server.games */
    int auditor_gone; /* VT_REASON_AUDITOR_GONE / VT_REASON_PREEMPTED after the auditor's last failed ask */
    uint32_t resumes;
    int64_t drop_pause_ms; /* the pause before asking again after a dropped connection to the trainer */
    int64_t slow_ms;       /* the auditor's time on Q_STATE and Q_CHAIN answers and away from its game: past a
                            * deadline, a waiting auditor of the same run preempts it */
    vt_conn *ct, *ca; /* trainer, auditor */
    vt_transcript *tr;
    char trainer_addr[VT_MSG_ADDR_MAX + 1];
    int have_endpoint;
    uint8_t trainer_pk[32];
    int64_t used_ms[4];   /* per party (VT_ROLE_*) */
    int64_t credit_ms[4]; /* per party: the work allowances credited to its clock (vt_ask_bounds) */
    double t0;
    uint32_t attempts, note_seq, local_failures;
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

/* Pauses p ms (at most what is left of the party's clock), charged to the party. 1 when time is left. */
static int pause_charged(live *L, int party, int64_t *pause, int64_t cap)
{
    int64_t p = clock_left(L, party);
    p = p < *pause ? p : *pause;
    if (p > 0) {
        struct timespec ts = {(time_t)(p / 1000), (long)(p % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        L->used_ms[party] += p;
    }
    *pause = *pause * 2 > cap ? cap : *pause * 2;
    return clock_left(L, party) > 0;
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
        pause_charged(L, VT_ROLE_TRAINER, &pause, 2000); /* the loop's top ends it when the clock has run out */
    }
}

static void heartbeat(live *L, int qtype);
static int slot_lock_take_resume(live *L, vt_conn **nc, int64_t wait_ms);

/* The auditor's connection dropped (or a resumed one is waiting): close it and take the resumed
 * connection, waiting for it within the auditor's clock (the wait charged to it). 0 with L->ca, -1
 * when its clock ran out first. */
static void drop_auditor(live *L);
/* Whether a challenger of the same commitment waits while this game's auditor has been slow or away
 * for a deadline (L->slow_ms): then the slot goes to the waiting one (docs/dispute.md "Access control"). */
static int preempted(live *L);

static int await_auditor(live *L)
{
    drop_auditor(L);
    int64_t at = ms_since(L->t0);
    double t = vt_now();
    vt_conn *nc = NULL;
    for (;;) { /* in steps of a second: a waiting auditor of the same run may preempt an absent one */
        int64_t left = clock_left(L, VT_ROLE_AUDITOR) - ms_since(t);
        if (left <= 0 || slot_lock_take_resume(L, &nc, left < 1000 ? left : 1000)) break;
        int64_t el = ms_since(t);
        L->slow_ms += el, L->used_ms[VT_ROLE_AUDITOR] += el, t = vt_now(); /* charged as it goes */
        if (preempted(L)) break;
    }
    int64_t el = ms_since(t);
    L->used_ms[VT_ROLE_AUDITOR] += el;
    L->slow_ms += el;
    if (!nc) return -1;
    L->ca = nc;
    vt_conn_set_transcript(L->ca, L->tr);
    L->resumes++;
    record_note(L, VT_NOTE_CONNECT, VT_ROLE_AUDITOR, 0, L->resumes, at, ms_since(L->t0) - at,
                "the auditor resumed its game (resumption %u)", L->resumes);
    if (!L->o->quiet) fprintf(stderr, "arbiter: the auditor resumed its game after %lld ms\n", (long long)(ms_since(L->t0) - at));
    return 0;
}


/* The auditor's slot goes to a waiting auditor of the same run: recorded (nobody at fault). */
static vt_err preempt_auditor(live *L, int64_t at)
{
    L->auditor_gone = VT_REASON_PREEMPTED;
    record_note(L, VT_NOTE_NO_ANSWER, VT_ROLE_AUDITOR, VT_NOANS_PREEMPTED, 0, at, ms_since(L->t0) - at,
                "preempted: the auditor was slow or away for %lld ms (a deadline is %d ms) while another auditor of "
                "this run waits for a slot", (long long)L->slow_ms, L->o->deadline_ms);
    VT_RETURN_ERROR(VT_ERR_IO, "the auditor was preempted by a waiting auditor of the same run");
}

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
    L->auditor_gone = 0;
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
        if (party == VT_ROLE_AUDITOR) {
            if (preempted(L)) return preempt_auditor(L, at);
            vt_conn *nc = NULL;
            if (L->ca) slot_lock_take_resume(L, &nc, 0); /* resumed while the game asked the trainer */
            if (nc) {
                vt_conn_close(L->ca);
                L->ca = nc;
                vt_conn_set_transcript(L->ca, L->tr);
                L->resumes++;
                record_note(L, VT_NOTE_CONNECT, VT_ROLE_AUDITOR, 0, L->resumes, at, 0,
                            "the auditor resumed its game (resumption %u)", L->resumes);
            }
            if (!L->ca && await_auditor(L)) {
                if (preempted(L)) return preempt_auditor(L, at);
                L->auditor_gone = VT_REASON_AUDITOR_GONE;
                record_note(L, VT_NOTE_NO_ANSWER, party, VT_NOANS_GONE, 0, at, ms_since(L->t0) - at,
                            "the auditor's connection dropped and it did not resume its game within its clock (%d ms)",
                            L->o->clock_ms);
                VT_RETURN_ERROR(VT_ERR_IO, "the auditor's connection dropped and it did not come back within its clock");
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
        if (!e && party == VT_ROLE_TRAINER) {
            int hb = L->o->heartbeat_ms > 0 ? L->o->heartbeat_ms : VT_ARBITER_HEARTBEAT_MS;
            while (dl > hb && !vt_conn_wait_readable(c, hb)) {
                dl -= hb;
                heartbeat(L, qtype);
            }
        }
        if (!e) e = vt_recv_msg(c, atype, dl, &lim, ans);
        int64_t el = ms_since(t);
        L->used_ms[party] += el;
        /* what may preempt a slow auditor: its time on the questions an honest one answers from what it
         * computed before it challenged (its states and its segment's chain) */
        if (party == VT_ROLE_AUDITOR && (qtype == VT_MSG_Q_STATE || qtype == VT_MSG_Q_CHAIN)) L->slow_ms += el;
        if (!e && party == VT_ROLE_TRAINER && session_error(ans)) {
            /* the trainer's server closed this session (idle, evicted, busy): never an answer. Reconnect
             * and ask again after a pause, within its clock: no count of such ends decides anything. */
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
            /* busy: a limit of the trainer's that frees with time (500 ms doubling to 5 s); else 200 ms to 2 s */
            if (busy_code ? pause_charged(L, party, &L->busy_pause_ms, 5000)
                          : pause_charged(L, party, &L->drop_pause_ms, 2000))
                continue;
            record_note(L, VT_NOTE_NO_ANSWER, party, VT_NOANS_LOST, 0, at, el, "%s to %s: %s", who,
                        vt_msg_type_name(qtype), why);
            VT_RETURN_ERROR(VT_ERR_IO, "%s, until its clock ran out", why);
        }
        if (!e) {
            if (party == VT_ROLE_TRAINER) L->busy_pause_ms = 500, L->drop_pause_ms = 200; /* an answer: progress */
            L->bytes += ans->raw_len;
            return VT_OK;
        }
        int deadline = vt_proto_deadline_exceeded();
        char why[600];
        snprintf(why, sizeof why, "%s", vt_errmsg());
        /* A dropped connection (not a deadline, not a bad message) costs the party the time it was
         * unreachable, nothing else: the trainer is dialled again after a pause, the auditor's
         * resumption is awaited, each within the party's clock. Every answer is a function of the
         * commitment (or of the auditor's own replay), so nothing established is lost. */
        int dropped = !deadline && e == VT_ERR_IO;
        if (party == VT_ROLE_TRAINER && dropped) {
            vt_conn_close(L->ct);
            L->ct = NULL;
            record_note(L, VT_NOTE_CONNECT, VT_ROLE_TRAINER, 4, L->attempts, ms_since(L->t0), el,
                        "%s: the connection dropped during %s: %s", L->trainer_addr, vt_msg_type_name(qtype), why);
            if (pause_charged(L, party, &L->drop_pause_ms, 2000)) continue;
        }
        if (party == VT_ROLE_AUDITOR && dropped) {
            if (!L->o->quiet) fprintf(stderr, "arbiter: the auditor's connection dropped (%s); awaiting its resumption\n", why);
            drop_auditor(L);
            continue; /* awaited at the top, within its clock */
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
    if (!L->ca) return;
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

typedef struct {
    server *S;
    vt_conn *ca;
    vt_msg chm; /* the auditor's CHALLENGE (signature verified by the gate) */
    char ip[64], peer[80];
    int id, slot; /* slot: its entry in server.games */
    uint64_t time; /* seconds since 1970 when the challenge was taken (the verdict names it) */
} game_job;

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
    game_done_rec done[VTI_DONE_KEPT];
    int done_next;
    waiter waiting[VTI_WAITERS];
    uint64_t wait_seq;
    vt_game_arith arith; /* the GEMM arithmetics' weights, set once at start-up for every game */
};

/* Takes the auditor's resumed connection of L's game, waiting up to wait_ms for one (0: only a look). */
static int slot_lock_take_resume(live *L, vt_conn **nc, int64_t wait_ms)
{
    server *S = L->S;
    game_slot *gs = &S->games[L->slot];
    double t0 = vt_now();
    pthread_mutex_lock(&S->mu);
    while (!gs->resume) {
        int64_t left = wait_ms - ms_since(t0);
        if (left <= 0) break;
        struct timespec ts;
        vt_abstime_after(&ts, left < 500 ? left : 500);
        pthread_cond_timedwait(&S->cv, &S->mu, &ts);
    }
    *nc = gs->resume;
    gs->resume = NULL;
    if (*nc) gs->ca = *nc;
    else if (wait_ms > 0) gs->ca = NULL;
    pthread_mutex_unlock(&S->mu);
    return *nc != NULL;
}

static int waiting_for(server *S, const uint8_t cm[32])
{
    for (int i = 0; i < VTI_WAITERS; i++)
        if (S->waiting[i].used && memcmp(S->waiting[i].cm, cm, 32) == 0) return 1;
    return 0;
}

static int preempted(live *L)
{
    server *S = L->S;
    pthread_mutex_lock(&S->mu);
    int p = L->slow_ms >= L->o->deadline_ms && waiting_for(S, S->games[L->slot].cm);
    pthread_mutex_unlock(&S->mu);
    return p;
}

/* Closes the auditor's connection; arb_admit no longer shuts it down on a resumption. */
static void drop_auditor(live *L)
{
    pthread_mutex_lock(&L->S->mu);
    if (L->S->games[L->slot].ca == L->ca) L->S->games[L->slot].ca = NULL;
    pthread_mutex_unlock(&L->S->mu);
    vt_conn_close(L->ca);
    L->ca = NULL;
}

static int live_gone(void *ctx, int party)
{
    live *L = ctx;
    return party == VT_ROLE_AUDITOR ? L->auditor_gone : 0;
}

static void start_waiters(server *S);

/* A game ended: its slot is free (its verdict kept for a CHALLENGE sent again; v NULL when it never
 * ran), and the oldest waiting challenge that fits now starts. */
static void game_done(server *S, const char *ip, int slot, const vt_msg_verdict *v)
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
    L.drop_pause_ms = 200;
    L.S = S;
    L.slot = job->slot;
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
        vt_game_io io = {live_ask, &L, live_note, live_endpoint, S->kp.pk, job->time, live_gone};
        vt_game_play(&io, ch, o->data_root, o->order, &lim, &res);
        /* the transcript holds the verdict once, whoever it reaches: recorded here, its copies sent unrecorded
         * (an auditor away gets it when it sends its CHALLENGE again) */
        vt_buf vb;
        vt_buf_init(&vb);
        if ((vt_msg_encode(VT_MSG_VERDICT, &res.v, L.note_seq++, &S->kp, &vb) ||
             vt_transcript_append(L.tr, VT_TR_SENT, S->kp.pk, vb.data, vb.len)) && !o->quiet)
            fprintf(stderr, "arbiter: cannot record the verdict in the transcript: %s\n", vt_errmsg());
        vt_buf_free(&vb);
        if (L.ca) vt_conn_set_transcript(L.ca, NULL);
        if (L.ct) vt_conn_set_transcript(L.ct, NULL);
        if ((!L.ca || vt_send_msg(L.ca, VT_MSG_VERDICT, &res.v, &S->kp)) && !o->quiet)
            fprintf(stderr, "arbiter: could not deliver the verdict to the auditor now (it gets it when it sends its "
                    "CHALLENGE again)\n");
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
    pthread_mutex_lock(&S->mu);
    S->games[job->slot].ca = NULL; /* arb_admit no longer shuts it down */
    pthread_mutex_unlock(&S->mu);
    vt_conn_close(L.ca);
    if (vt_transcript_close(L.tr) && !o->quiet) fprintf(stderr, "arbiter: transcript %s: %s\n", path, vt_errmsg());
    vt_msg_free(&job->chm);
    game_done(S, job->ip, job->slot, e ? NULL : &res.v);
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
        ok = pthread_create(&th, &at, game_main, job) == 0;
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
    game_done(S, ip, gslot, NULL);
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
    int se = session_error(&m);
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
