/* vt_serve.c - the trainer's side of the dispute game. The gate (protocol/) authenticates
 * connections off the accept loop; only arbiters whose keys the trainer accepts get a session
 * (a thread), bounded per arbiter and in all; everyone else gets an ERROR and a log line.
 * Every answer is signed (by the transport), computed from the run directory and, where
 * values are needed, by re-creating the committed computation from the nearest checkpoint,
 * within a recomputation budget per arbiter key (a bucket that refills with time, shared by all of
 * that arbiter's sessions); segment chains are cached for all sessions. The computations (jobs)
 * and the chain cache are in vt_serve_jobs.c. */
#include "vt_serve.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vt_dispute.h"
#include "../common/vt_bytes.h"
#include "../common/vt_cli.h"
#include "../common/vt_hash.h"
#include "../data/vt_data.h"
#include "../merkle/vt_merkle.h"
#include "../merkle/vt_sign.h"
#include "../protocol/vt_proto.h"
#include "../store/vt_store.h"
#include "../run/vt_train.h"
#include "vt_serve_int.h"

static void reject_log(session *ss, int code, const char *what) { vt_log_rejection_code("trainer", ss->peer, code, what); }

vt_err vti_serve_send_error_code(session *ss, int code, const char *what)
{
    reject_log(ss, code, what);
    vt_msg_error er;
    memset(&er, 0, sizeof er);
    er.code = (uint16_t)code;
    snprintf(er.message, sizeof er.message, "%s", what);
    for (char *p = er.message; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) *p = '?';
    return vt_send_msg(ss->c, VT_MSG_ERROR, &er, &ss->sv->kp);
}

/* Charges `steps` of recomputation to the session's arbiter key, or refuses (ERROR, -1). The
 * key's bucket holds at most VT_SERVE_BUCKET_GAMES games' budgets and refills one budget every
 * VT_SERVE_REFILL_S seconds, whatever the number of its sessions: fresh sessions buy nothing.
 * An empty bucket answers ERROR busy (a session-level "later": the arbiter reconnects and asks
 * again within the trainer's clock, docs/dispute.md); a request no full bucket could hold, ERROR
 * limit. */
int vti_serve_charge(session *ss, uint64_t steps, vt_err *e)
{
    server *sv = ss->sv;
    double cap = (double)sv->budget * VT_SERVE_BUCKET_GAMES, now = vt_now();
    pthread_mutex_lock(&sv->mu);
    double t = sv->tokens[ss->arb] + (now - sv->refilled[ss->arb]) * (double)sv->budget / VT_SERVE_REFILL_S;
    sv->tokens[ss->arb] = t > cap ? cap : t;
    sv->refilled[ss->arb] = now;
    double have = sv->tokens[ss->arb];
    int ok = (double)steps <= have;
    if (ok) sv->tokens[ss->arb] -= (double)steps;
    pthread_mutex_unlock(&sv->mu);
    if (ok) return 0;
    char m[240];
    if ((double)steps > cap) {
        snprintf(m, sizeof m, "recomputation limit: %llu steps asked, at most %.0f per arbiter key",
                 (unsigned long long)steps, cap);
        *e = vti_serve_send_error_code(ss, VT_ERRC_LIMIT, m);
    } else {
        snprintf(m, sizeof m, "busy: this arbiter key's recomputation budget holds %.0f steps now, %llu asked; it refills "
                 "%llu steps every %d s", have, (unsigned long long)steps, (unsigned long long)sv->budget,
                 VT_SERVE_REFILL_S);
        *e = vti_serve_send_error_code(ss, VT_ERRC_BUSY, m);
    }
    return -1;
}

static vt_err send_error(session *ss, const char *what)
{
    return vti_serve_send_error_code(ss, VT_ERRC_NO_SUCH, what);
}

static vt_err answer(session *ss, const vt_msg *q)
{
    server *sv = ss->sv;
    const vt_serve_opts *o = sv->o;
    int type = q->hdr.type;
    switch (type) {
    case VT_MSG_Q_SERVICE: { /* the current record and a fresh nonce: this game's first question */
        vt_msg_service a;
        memset(&a, 0, sizeof a);
        memcpy(a.commitment_hash, q->body.q_service.commitment_hash, 32);
        memcpy(a.auditor_nonce, q->body.q_service.auditor_nonce, 32);
        VT_FORWARD_IF_ERROR(vt_proto_nonce(a.trainer_nonce));
        pthread_mutex_lock(&sv->mu);
        memcpy(a.record, sv->rec_bytes, sv->rec_len);
        a.record_len = (uint16_t)sv->rec_len;
        pthread_mutex_unlock(&sv->mu);
        return vt_send_msg(ss->c, VT_MSG_SERVICE, &a, &sv->kp);
    }
    case VT_MSG_Q_MANIFEST: {
        vt_msg_log a = {0, (uint32_t)sv->manifest_len, (uint8_t *)sv->manifest};
        return vt_send_msg(ss->c, VT_MSG_MANIFEST, &a, &sv->kp);
    }
    case VT_MSG_Q_COMMITMENT: {
        vt_msg_log a = {0, VT_MSG_COMMITMENT_LEN, sv->commitment};
        return vt_send_msg(ss->c, VT_MSG_COMMITMENT, &a, &sv->kp);
    }
    case VT_MSG_Q_LEAF: {
        uint64_t s = q->body.q_leaf.step;
        vt_step_rec r;
        if (s >= vt_merkle_size(&sv->tree) || vt_store_get_step(ss->st, s, &r)) return send_error(ss, "no such step");
        vt_msg_leaf a;
        memset(&a, 0, sizeof a);
        a.step = s;
        a.has_state = (uint8_t)r.has_state;
        memcpy(a.state_hash, r.state_hash, 32);
        memcpy(a.log_hash, r.log_hash, 32);
        memcpy(a.leaf, r.leaf, 32);
        a.tree_size = vt_merkle_size(&sv->tree);
        size_t n = 0;
        VT_FORWARD_IF_ERROR(vt_merkle_prove(&sv->tree, s, a.path, VT_MSG_PATH_MAX, &n));
        a.n_path = (uint16_t)n;
        if (o->serve_hooks && o->serve_hooks->tamper) o->serve_hooks->tamper(o->serve_hooks->ctx, VT_MSG_LEAF, &a);
        return vt_send_msg(ss->c, VT_MSG_LEAF, &a, &sv->kp);
    }
    case VT_MSG_Q_LOG: {
        uint8_t *blob = NULL;
        size_t n = 0;
        if (vt_store_get_log(ss->st, q->body.q_log.step, &blob, &n)) return send_error(ss, "no such step");
        vt_msg_log a = {q->body.q_log.step, (uint32_t)n, blob};
        vt_err e = vt_send_msg(ss->c, VT_MSG_LOG, &a, &sv->kp);
        free(blob);
        return e;
    }
    case VT_MSG_Q_CHAIN:
    case VT_MSG_Q_PREFIX: {
        const vt_msg_q_chain *qc = &q->body.q_chain;
        uint8_t C[32], h[32], (*hs)[32] = NULL;
        uint64_t total = 0;
        vt_err e = VT_OK;
        if (vti_serve_chain_answer(ss, qc, type == VT_MSG_Q_PREFIX, C, h, &hs, &total, &e)) return e;
        if (type == VT_MSG_Q_PREFIX) {
            vt_msg_hashes a = {qc->seg_from, qc->seg_to, (uint32_t)qc->pos, hs};
            if (o->serve_hooks && o->serve_hooks->tamper) o->serve_hooks->tamper(o->serve_hooks->ctx, VT_MSG_HASHES, &a);
            e = vt_send_msg(ss->c, VT_MSG_HASHES, &a, &sv->kp);
            free(hs);
            return e;
        }
        vt_msg_chain_claim a;
        a.seg_from = qc->seg_from, a.seg_to = qc->seg_to, a.pos = qc->pos, a.total_positions = total;
        memcpy(a.chain_hash, C, 32);
        memcpy(a.output_hash, h, 32);
        if (o->serve_hooks && o->serve_hooks->tamper)
            o->serve_hooks->tamper(o->serve_hooks->ctx, VT_MSG_CHAIN_CLAIM, &a);
        return vt_send_msg(ss->c, VT_MSG_CHAIN_CLAIM, &a, &sv->kp);
    }
    case VT_MSG_Q_TENSORS: {
        uint64_t s = q->body.q_step.step;
        if (s > sv->rcp.steps) return send_error(ss, "no such step");
        vt_err ce = VT_OK;
        job *jb = vti_serve_job_wait(ss, VT_MSG_Q_TENSORS, s, 0, vti_serve_restore_cost(&sv->rcp, s), &ce);
        if (!jb) return ce;
        vt_msg_hashes a = {s, s, jb->nth, jb->th};
        ce = vt_send_msg(ss->c, VT_MSG_HASHES, &a, &sv->kp);
        vti_serve_job_release(sv, jb, 0);
        return ce;
    }
    case VT_MSG_Q_INPUTS: {
        uint64_t s = q->body.q_inputs.step;
        uint32_t j = q->body.q_inputs.op;
        if (s < 1 || s > sv->rcp.steps || j < 1) return send_error(ss, "no such operation");
        vt_err ce = VT_OK;
        job *jb = vti_serve_job_wait(ss, VT_MSG_Q_INPUTS, s, j, vti_serve_restore_cost(&sv->rcp, s - 1) + 1, &ce);
        if (!jb) return ce;
        vt_msg_inputs a = {s, j, (uint16_t)jb->nt, jb->t}; /* the job's tensors, shared: a hook changes this copy */
        if (o->serve_hooks && o->serve_hooks->tamper) o->serve_hooks->tamper(o->serve_hooks->ctx, VT_MSG_INPUTS, &a);
        ce = vt_send_msg(ss->c, VT_MSG_INPUTS, &a, &sv->kp);
        vti_serve_job_release(sv, jb, 0);
        return ce;
    }
    case VT_MSG_VERDICT: {
        /* the arbiter's signed verdict ends the game (signature checked by vt_recv_msg) */
        const vt_msg_verdict *v = &q->body.verdict;
        if (!o->quiet)
            fprintf(stderr, "trainer: verdict from %s: %s at step %llu, operation %u: %s\n", ss->peer,
                    v->loser == VT_LOSER_TRAINER   ? "against the trainer"
                    : v->loser == VT_LOSER_AUDITOR ? "against the auditor"
                    : v->loser == VT_LOSER_BOTH    ? "against both"
                                                   : "nobody loses",
                    (unsigned long long)v->step, v->op, v->reason);
        return VT_ERR_IO; /* the session is over */
    }
    default: {
        char m[96];
        snprintf(m, sizeof m, "unexpected %s: this trainer answers the arbiter's questions only", vt_msg_type_name(type));
        return vti_serve_send_error_code(ss, VT_ERRC_UNEXPECTED, m);
    }
    }
}

static void session_end(session *ss)
{
    server *sv = ss->sv;
    pthread_mutex_lock(&sv->mu);
    for (int i = 0; i < 256; i++)
        if (sv->sessions[i] == ss) sv->sessions[i] = NULL;
    sv->active--;
    pthread_cond_broadcast(&sv->cv);
    pthread_mutex_unlock(&sv->mu);
    vt_conn_close(ss->c);
    free(ss);
}

static void *session_main(void *p)
{
    session *ss = p;
    server *sv = ss->sv;
    vt_err oe = vt_store_open(sv->o->run_dir, 1, &ss->st);
    if (oe) {
        char m[600];
        snprintf(m, sizeof m, "cannot open the run: %.500s", vt_errmsg());
        if (vti_serve_send_error_code(ss, VT_ERRC_INTERNAL, m)) { /* the arbiter may be gone */ }
    } else {
        vt_msg_limits lim;
        memset(&lim, 0, sizeof lim);
        for (int t = 1; t < VT_MSG_TYPE_COUNT_; t++) lim.max_body[t] = 64; /* only small questions come in */
        lim.max_body[VT_MSG_VERDICT] = vt_msg_max_body(VT_MSG_VERDICT, NULL); /* and the arbiter's verdict */
        for (int answered = 0;; answered++) {
            const vt_serve_hooks *hk = sv->o->serve_hooks;
            if (hk && hk->drop && hk->drop(hk->ctx, answered)) break; /* as if the network dropped it */
            vt_msg q;
            vt_err re = vt_recv_msg(ss->c, VT_MSG_ANY, sv->o->idle_ms, &lim, &q);
            if (re) {
                pthread_mutex_lock(&sv->mu);
                int ev = ss->evicted;
                pthread_mutex_unlock(&sv->mu);
                char m[600];
                int code = vt_proto_deadline_exceeded() ? VT_ERRC_TIMEOUT
                           : re == VT_ERR_LIMIT          ? VT_ERRC_LIMIT
                           : re == VT_ERR_IO             ? 0
                                                         : VT_ERRC_MALFORMED;
                snprintf(m, sizeof m, "%s%.500s", ev ? "session evicted for a newer one of this arbiter: " : "",
                         code == VT_ERRC_TIMEOUT ? "idle for too long" : vt_errmsg());
                if (code && !ev) {
                    if (vti_serve_send_error_code(ss, code, m)) { /* best effort */ }
                } else if (ev || !strstr(m, "closed by peer")) {
                    vt_log_rejection("trainer", ss->peer, m);
                }
                break;
            }
            pthread_mutex_lock(&sv->mu);
            ss->last = vt_now();
            ss->busy = 1;
            pthread_mutex_unlock(&sv->mu);
            vt_err e = hk && hk->silent && hk->silent(hk->ctx) ? VT_OK : answer(ss, &q);
            pthread_mutex_lock(&sv->mu);
            ss->busy = 0;
            ss->last = vt_now();
            pthread_mutex_unlock(&sv->mu);
            vt_msg_free(&q);
            if (e) break;
        }
        vt_store_close(ss->st);
    }
    session_end(ss);
    return NULL;
}

static void tr_reject(void *ctx, const char *peer, int code, const char *reason)
{
    (void)ctx;
    vt_log_rejection_code("trainer", peer, code, reason);
}

/* Signs the service record anew (a higher serial; expiry now + the TTL) and writes it atomically. */
static vt_err sign_record(server *sv)
{
    uint64_t now = (uint64_t)time(NULL);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    vt_service r = sv->rec;
    r.serial = us > r.serial ? us : r.serial + 1; /* only grows */
    r.expiry = now + (uint64_t)sv->o->record_ttl_s;
    uint8_t b[VT_SERVICE_MAX_LEN];
    size_t n = 0;
    VT_FORWARD_IF_ERROR(vt_service_sign(&r, &sv->kp, b, sizeof b, &n));
    VT_FORWARD_IF_ERROR(vt_write_file_atomic(sv->rec_path, b, n));
    pthread_mutex_lock(&sv->mu);
    sv->rec = r;
    memcpy(sv->rec_bytes, b, n);
    sv->rec_len = n;
    pthread_mutex_unlock(&sv->mu);
    sv->rec_resign_at = now + (uint64_t)(sv->o->record_ttl_s / 2 > 0 ? sv->o->record_ttl_s / 2 : 1);
    return VT_OK;
}

static int tr_stop(void *ctx)
{
    server *sv = ctx;
    if (sv->rec_len && !sv->rec_failed && (uint64_t)time(NULL) >= sv->rec_resign_at) { /* the gate's thread only */
        if (sign_record(sv)) {
            sv->rec_failed = 1;
            fprintf(stderr, "trainer: cannot re-sign the service record %s: %s\n", sv->rec_path, vt_errmsg());
        } else if (!sv->o->quiet) {
            fprintf(stderr, "trainer: re-signed the service record %s (expires %llu)\n", sv->rec_path,
                    (unsigned long long)sv->rec.expiry);
        }
    }
    pthread_mutex_lock(&sv->mu);
    int stop = sv->o->max_connections > 0 && sv->handled >= sv->o->max_connections;
    pthread_mutex_unlock(&sv->mu);
    return stop;
}

/* The oldest-idle session of key pk (or, pk NULL, of the key with the most sessions). */
static session *eviction_candidate(server *sv, const uint8_t *pk)
{
    session *best = NULL;
    int best_n = 0;
    for (int i = 0; i < 256; i++) {
        session *s = sv->sessions[i];
        if (!s || s->evicted) continue;
        if (s->busy) continue; /* answering: its game would lose the work (and its arbiter reconnect) */
        int n = 0;
        for (int k = 0; k < 256; k++)
            n += sv->sessions[k] && !sv->sessions[k]->evicted && memcmp(sv->sessions[k]->pk, s->pk, 32) == 0;
        if (pk && memcmp(s->pk, pk, 32) != 0) continue;
        if (!best || (!pk && n > best_n) || ((pk || n == best_n) && s->last < best->last)) best = s, best_n = n;
    }
    return best;
}

/* The refusal's text for a key that is not an accepted arbiter's. */
static void not_an_arbiter(const uint8_t pk[32], char *m, size_t cap)
{
    char fpr[VT_SIGN_FPR_HEX_LEN + 1];
    if (vt_sign_fingerprint(pk, fpr)) snprintf(fpr, sizeof fpr, "?");
    snprintf(m, cap, "key %s is not an arbiter this trainer answers", fpr);
}

/* A key that is not an accepted arbiter's: Q_SERVICE gets the current record (docs/dispute.md "Fresh
 * service records"), at most VTI_PUBLIC_QUESTIONS times, each within VTI_PUBLIC_MS; any other question
 * ERROR unauthorized, and the connection ends. */
static void *public_main(void *p)
{
    session *ps = p;
    server *sv = ps->sv;
    vt_msg_limits lim;
    memset(&lim, 0, sizeof lim);
    for (int t = 1; t < VT_MSG_TYPE_COUNT_; t++) lim.max_body[t] = 64; /* only small questions come in */
    char m[200];
    not_an_arbiter(ps->pk, m, sizeof m);
    for (int k = 0; k < VTI_PUBLIC_QUESTIONS; k++) {
        vt_msg q;
        vt_err re = vt_recv_msg(ps->c, VT_MSG_ANY, VTI_PUBLIC_MS, &lim, &q);
        if (re) { /* silence, a large or malformed frame, or the peer gone: refused (logged) unless it asked already */
            if (k == 0 && (vt_proto_deadline_exceeded() || re != VT_ERR_IO || !strstr(vt_errmsg(), "closed by peer")))
                if (vti_serve_send_error_code(ps, VT_ERRC_UNAUTHORIZED, m)) { /* best effort */ }
            break;
        }
        int service = q.hdr.type == VT_MSG_Q_SERVICE;
        vt_err e = service ? answer(ps, &q) : vti_serve_send_error_code(ps, VT_ERRC_UNAUTHORIZED, m);
        vt_msg_free(&q);
        if (!service || e) break;
    }
    vt_conn_close(ps->c);
    pthread_mutex_lock(&sv->mu);
    sv->public_active--;
    pthread_cond_broadcast(&sv->cv);
    pthread_mutex_unlock(&sv->mu);
    free(ps);
    return NULL;
}

/* An authenticated peer: an accepted arbiter gets a session (evicting the oldest-idle one of
 * the same arbiter, or of the busiest one, at the limits; never one that is answering: if every
 * one is, ERROR busy); anyone else an ERROR. */
static void tr_admit(void *ctx, vt_gate_peer *p)
{
    server *sv = ctx;
    const vt_serve_opts *o = sv->o;
    const uint8_t *pk = vt_conn_peer_pk(p->c);
    int accepted = 0;
    for (int i = 0; i < o->n_arbiters; i++) accepted |= memcmp(o->arbiter_pk[i], pk, 32) == 0;
    if (!accepted) {
        char m[200];
        not_an_arbiter(pk, m, sizeof m);
        /* anyone may ask for the current service record (an auditor before it challenges): up to
         * VTI_PUBLIC_QUESTIONS questions, read by one of at most VTI_PUBLIC threads; anything else refused */
        session *ps = NULL;
        pthread_mutex_lock(&sv->mu);
        if (sv->public_active < VTI_PUBLIC && (ps = calloc(1, sizeof *ps)) != NULL) sv->public_active++;
        pthread_mutex_unlock(&sv->mu);
        pthread_t th;
        if (ps) {
            ps->sv = sv, ps->c = p->c, ps->last = vt_now(), ps->arb = -1;
            memcpy(ps->pk, pk, 32);
            snprintf(ps->peer, sizeof ps->peer, "%s", p->peer);
            vt_conn_set_send_timeout(p->c, 1000);
            if (pthread_create(&th, NULL, public_main, ps) == 0) {
                pthread_detach(th);
                return;
            }
            pthread_mutex_lock(&sv->mu);
            sv->public_active--;
            pthread_mutex_unlock(&sv->mu);
            free(ps);
        }
        tr_reject(sv, p->peer, VT_ERRC_UNAUTHORIZED, m);
        vt_conn_refuse(p->c, &sv->kp, VT_ERRC_UNAUTHORIZED, m);
        return;
    }
    session *ss = calloc(1, sizeof *ss);
    if (!ss) {
        vt_conn_refuse(p->c, &sv->kp, VT_ERRC_INTERNAL, "out of memory");
        return;
    }
    ss->sv = sv, ss->c = p->c, ss->last = vt_now();
    memcpy(ss->pk, pk, 32);
    for (int i = 0; i < o->n_arbiters; i++)
        if (memcmp(o->arbiter_pk[i], pk, 32) == 0) ss->arb = i;
    snprintf(ss->peer, sizeof ss->peer, "%s", p->peer);
    vt_conn_set_send_timeout(p->c, o->idle_ms > 0 ? o->idle_ms : 60000);
    pthread_mutex_lock(&sv->mu);
    int mine = 0, all = 0, slot = -1;
    for (int i = 0; i < 256; i++) {
        session *s = sv->sessions[i];
        if (!s) {
            if (slot < 0) slot = i;
            continue;
        }
        if (s->evicted) continue;
        all++;
        mine += memcmp(s->pk, pk, 32) == 0;
    }
    session *victim = NULL;
    if (mine >= o->sessions_per_arbiter)
        victim = eviction_candidate(sv, pk);
    else if (all >= o->max_sessions)
        victim = eviction_candidate(sv, NULL);
    if (victim) {
        victim->evicted = 1;
        vt_conn_shutdown(victim->c);
    } else if (mine >= o->sessions_per_arbiter || all >= o->max_sessions) {
        slot = -1; /* every session at the limit is answering: ERROR busy, the arbiter asks again later */
    }
    if (slot >= 0) {
        sv->sessions[slot] = ss;
        sv->active++;
        sv->handled++;
    }
    pthread_mutex_unlock(&sv->mu);
    pthread_t th;
    if (slot >= 0 && pthread_create(&th, NULL, session_main, ss) == 0) {
        pthread_detach(th);
        return;
    }
    tr_reject(sv, p->peer, VT_ERRC_BUSY, "cannot start a session");
    vt_conn_refuse(p->c, &sv->kp, VT_ERRC_BUSY, "the trainer cannot start a session now; try again");
    ss->c = NULL;
    if (slot >= 0) {
        ss->c = NULL;
        session_end(ss);
    } else {
        free(ss);
    }
}

/* The address to sign: --advertise, or the listen host with the bound port. */
static vt_err service_addr(const vt_serve_opts *o, uint16_t port, char *out, size_t n)
{
    if (o->advertise) {
        snprintf(out, n, "%s", o->advertise);
        return VT_OK;
    }
    const char *colon = strrchr(o->listen, ':');
    size_t hl = colon ? (size_t)(colon - o->listen) : 0;
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)hl, o->listen);
    VT_RETURN_ERROR_IF(!hl || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "[::]") == 0, VT_ERR_ARG,
                       "listening on every address: say with --advertise HOST:PORT where arbiters reach this trainer");
    snprintf(out, n, "%.200s:%u", host, (unsigned)port);
    return VT_OK;
}

vt_err vt_serve_run(const vt_serve_opts *o)
{
    server sv;
    memset(&sv, 0, sizeof sv);
    sv.o = o;
    pthread_mutex_init(&sv.mu, NULL);
    pthread_cond_init(&sv.cv, NULL);
    vt_merkle_init(&sv.tree);
    vt_store *st = NULL;
    vt_listener *l = NULL;
    uint8_t mh[32], dh[32];
    char spec[VT_RECIPE_SPEC_MAX];
    vt_err e = o->n_arbiters > 0 ? VT_OK : vt_set_error(VT_ERR_ARG, "no arbiter key: name the arbiters to answer");
    if (!e) e = vt_sign_init();
    if (!e) e = vt_sign_read_secret_key(o->key_path, &sv.kp);
    if (!e) e = vt_store_open(o->run_dir, 1, &st);
    if (!e) e = vt_store_manifest(st, &sv.manifest, &sv.manifest_len, mh);
    if (!e) {
        char cpath[4096];
        vt_store_commitment_path(o->run_dir, cpath, sizeof cpath);
        FILE *cf = fopen(cpath, "rb");
        size_t got = cf ? fread(sv.commitment, 1, sizeof sv.commitment, cf) : 0;
        if (cf) fclose(cf);
        if (got != sizeof sv.commitment) e = vt_set_error(VT_ERR_IO, "cannot read the commitment %s", cpath);
    }
    if (!e) e = vt_manifest_parse(sv.manifest, sv.manifest_len, &sv.rcp, dh);
    if (!e) {
        vt_recipe_dataset_spec(&sv.rcp, spec, sizeof spec);
        e = vt_data_load(spec, o->data_root, &sv.ds);
    }
    uint64_t count = 0;
    if (!e) e = vt_store_step_count(st, &count);
    for (uint64_t s = 0; !e && s < count; s++) {
        vt_step_rec r;
        e = vt_store_get_step(st, s, &r);
        if (!e) e = vt_merkle_append(&sv.tree, r.leaf);
    }
    vt_store_close(st);
    if (!e) {
        uint64_t K = sv.rcp.checkpoint_every, H = sv.rcp.state_hash_every, gap = K < H ? K : H;
        sv.budget = o->max_recompute_steps ? o->max_recompute_steps : 8 * K + 4 * gap + 16;
        for (int i = 0; i < VT_SERVE_MAX_ARBITERS; i++) /* every bucket starts full */
            sv.tokens[i] = (double)sv.budget * VT_SERVE_BUCKET_GAMES, sv.refilled[i] = vt_now();
        sv.max_cache = o->chain_cache < 0 ? 0 : o->chain_cache > VT_SERVE_CACHE_MAX ? VT_SERVE_CACHE_MAX : o->chain_cache;
    }
    uint16_t port = 0;
    if (!e) e = vt_listen(o->listen, &l, &port);
    if (!e) { /* the signed service record: where, until when and to which arbiters this trainer answers */
        memcpy(sv.rec.manifest_hash, mh, 32);
        sv.rec.n_arbiters = (uint32_t)o->n_arbiters;
        memcpy(sv.rec.arbiter_pk, o->arbiter_pk, 32 * (size_t)o->n_arbiters);
        int short_ok = o->serve_hooks && o->serve_hooks->short_record && o->serve_hooks->short_record(o->serve_hooks->ctx);
        e = o->record_ttl_s >= VT_SERVE_MIN_TTL_S || (short_ok && o->record_ttl_s > 0)
                ? service_addr(o, port, sv.rec.addr, sizeof sv.rec.addr)
                : vt_set_error(VT_ERR_ARG, "--record-ttl %d: a service record lives at least %d s (twice the lifetime "
                               "floor of %d s that arbiters and auditors check, docs/dispute.md)", o->record_ttl_s,
                               VT_SERVE_MIN_TTL_S, VT_RECORD_FLOOR_S);
        if (o->service_file)
            snprintf(sv.rec_path, sizeof sv.rec_path, "%s", o->service_file);
        else
            snprintf(sv.rec_path, sizeof sv.rec_path, "%s/%s", o->run_dir, VT_SERVICE_FILE);
        if (!e) e = sign_record(&sv);
        if (!e && !o->quiet)
            fprintf(stderr, "trainer: signed service record %s: %s, %d arbiter key(s), expires in %d s (re-signed while "
                    "serving)\n", sv.rec_path, sv.rec.addr, o->n_arbiters, o->record_ttl_s);
    }
    if (!e && o->port_file) { /* atomically: a reader polling for the file never sees half of it */
        char num[16];
        int k = snprintf(num, sizeof num, "%u\n", (unsigned)port);
        e = vt_write_file_atomic(o->port_file, num, (size_t)k);
    }
    if (!e && !o->quiet) fprintf(stderr, "trainer: serving %s on port %u\n", o->run_dir, port);
    vt_gate_opts go = {o->max_pending, o->pending_per_ip, o->handshake_ms, 0, 0, 0, 0};
    vt_gate_cb cb = {tr_admit, tr_reject, tr_stop, &sv};
    if (!e) e = vt_gate_run(l, &sv.kp, &go, &cb);
    /* wait for the sessions still running (at most 60 s, then they are shut down) */
    pthread_mutex_lock(&sv.mu);
    for (int i = 0; sv.active > 0 || sv.public_active > 0; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&sv.cv, &sv.mu, &ts);
        if (i == 60)
            for (int k = 0; k < 256; k++)
                if (sv.sessions[k]) vt_conn_shutdown(sv.sessions[k]->c);
    }
    pthread_mutex_unlock(&sv.mu);
    vt_listener_close(l);
    /* computations still running hold the server: wait for them (they end on their own) */
    pthread_mutex_lock(&sv.mu);
    for (int i = 0; i < VTI_JOBS; i++)
        while (sv.jobs[i].used && sv.jobs[i].state == VTI_JOB_RUNNING) pthread_cond_wait(&sv.cv, &sv.mu);
    pthread_mutex_unlock(&sv.mu);
    for (int i = 0; i < VTI_JOBS; i++) vti_serve_job_clear(&sv.jobs[i]);
    for (int i = 0; i < sv.n_cache; i++) vt_seg_chain_free(&sv.cache[i].ch);
    vt_merkle_free(&sv.tree);
    vt_data_free(&sv.ds);
    free(sv.manifest);
    vt_keypair_wipe(&sv.kp);
    pthread_cond_destroy(&sv.cv);
    pthread_mutex_destroy(&sv.mu);
    return e;
}

