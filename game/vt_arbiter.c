/* vt_arbiter.c - the arbiter's service: the game threads, each playing one challenge with the
 * parties' clocks and the auditor's resumption. The admission queue and `arbiter serve` are in
 * vt_arbiter_admit.c, the offline transcript check `arbiter check` in vt_arbiter_check.c. */
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
#include "vt_arbiter_int.h"

/* ------------------------------------------------------------------ live */

/* Clocks (docs/dispute.md "Clocks"): every wait for a party - each connection attempt, the
 * pause before the next one, each question until its answer - is charged to that party's
 * clock; a question may wait at most min(deadline, what is left of the clock). An unreachable
 * trainer is retried (pauses of 200 ms doubling to 2 s) until its clock runs out. Every attempt
 * and every missing answer is recorded, signed by the arbiter, in the transcript (NOTE). */

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
        if (!e && party == VT_ROLE_TRAINER && vti_session_error(ans)) {
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

static int preempted(live *L)
{
    server *S = L->S;
    pthread_mutex_lock(&S->mu);
    int p = L->slow_ms >= L->o->deadline_ms && vti_arbiter_waiting_for(S, S->games[L->slot].cm);
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

void *vti_arbiter_game_main(void *p)
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
                    "hashing, %llu bytes received, game %.3f s; clocks used: trainer %lld ms, auditor "
                    "%lld ms; transcript %s\n",
                    (unsigned long long)res.rounds, (unsigned long long)res.step_rounds,
                    (unsigned long long)res.op_rounds, res.recompute_seconds, res.hash_seconds,
                    (unsigned long long)L.bytes, vt_now() - L.t0,
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
    vti_arbiter_game_done(S, job->ip, job->slot, e ? NULL : &res.v);
    free(job);
    return NULL;
}
