/* vt_serve_jobs.c - the trainer's computations for the dispute game (docs/dispute.md "Connections
 * are not parties"): one per question, in a thread of its own that outlives the session which
 * asked, shared by every session that asks the same; and the segment chains' cache. */

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

static int has_state(const vt_recipe *rcp, uint64_t s)
{
    return vt_recipe_has_state(rcp, s);
}

static vt_err new_model(server *sv, vt_model *m)
{
    VT_FORWARD_IF_ERROR(vt_model_init(m, &sv->rcp, sv->ds.n, sv->o->order));
    vt_model_set_hooks(m, sv->o->hooks);
    return VT_OK;
}

/* Looks (lo, hi) up in the shared cache; copies what the answer needs. 1 found, 0 not. */
static int cache_get(server *sv, uint64_t lo, uint64_t hi, uint64_t pos, int prefix, uint8_t C[32], uint8_t h[32],
                     uint8_t (**hs)[32], uint64_t *total)
{
    int found = 0;
    pthread_mutex_lock(&sv->mu);
    for (int i = 0; i < sv->n_cache && !found; i++) {
        vt_seg_chain *ch = &sv->cache[i].ch;
        if (ch->lo != lo || ch->hi != hi) continue;
        found = 1;
        sv->cache[i].used = ++sv->tick;
        *total = ch->P + 1;
        if (pos > ch->P + 1) break;
        if (prefix) {
            *hs = pos ? malloc(pos * 32) : NULL;
            if (*hs) memcpy(*hs, ch->h + 1, pos * 32);
            if (pos && !*hs) found = -1;
        } else if (pos >= 1) {
            memcpy(C, ch->C[pos], 32);
            memcpy(h, ch->h[pos], 32);
        }
    }
    pthread_mutex_unlock(&sv->mu);
    return found;
}

static void cache_put(server *sv, vt_seg_chain *ch)
{
    pthread_mutex_lock(&sv->mu);
    int dup = 0;
    for (int i = 0; i < sv->n_cache; i++) dup |= sv->cache[i].ch.lo == ch->lo && sv->cache[i].ch.hi == ch->hi;
    if (dup || sv->max_cache <= 0) {
        vt_seg_chain_free(ch);
    } else {
        int slot = sv->n_cache;
        if (slot == sv->max_cache) { /* least recently used goes */
            slot = 0;
            for (int i = 1; i < sv->n_cache; i++)
                if (sv->cache[i].used < sv->cache[slot].used) slot = i;
            vt_seg_chain_free(&sv->cache[slot].ch);
        } else {
            sv->n_cache++;
        }
        sv->cache[slot].ch = *ch;
        sv->cache[slot].used = ++sv->tick;
    }
    memset(ch, 0, sizeof *ch);
    pthread_mutex_unlock(&sv->mu);
}

/* ------------------------------------------------------------------ computations (jobs) */

/* What a job computes, from the run directory alone (its own store handle: the session that asked
 * may be gone by the time it ends). */
static vt_err job_compute(job *jb)
{
    server *sv = jb->sv;
    vt_store *st = NULL;
    vt_model m;
    VT_FORWARD_IF_ERROR(vt_store_open(sv->o->run_dir, 1, &st));
    vt_err e = new_model(sv, &m);
    if (e) {
        vt_store_close(st);
        return e;
    }
    if (jb->kind == VT_MSG_Q_CHAIN) { /* the chain of segment (a, b] */
        vt_seg_chain ch;
        memset(&ch, 0, sizeof ch);
        e = vt_restore(&m, st, &sv->ds, VT_PARTY_TRAINER, jb->a);
        if (!e) e = vt_seg_chain_compute(&m, st, &sv->ds, VT_PARTY_TRAINER, jb->b, &ch);
        if (!e) cache_put(sv, &ch);
    } else if (jb->kind == VT_MSG_Q_TENSORS) { /* the tensor hashes of the state of step a */
        jb->th = calloc(m.n_tensors + 1, 32);
        e = jb->th ? vt_restore(&m, st, &sv->ds, VT_PARTY_TRAINER, jb->a) : vt_set_error(VT_ERR_NOMEM, "out of memory");
        if (!e) e = vt_model_tensor_hashes(&m, jb->th);
        jb->nth = m.n_tensors;
    } else { /* Q_INPUTS: the inputs of operation b of step a */
        uint64_t s = jb->a;
        uint32_t j = (uint32_t)jb->b;
        e = (s < 1 || s > sv->rcp.steps || j < 1 || j > m.n_ops) ? vt_set_error(VT_ERR_ARG, "no such operation") : VT_OK;
        if (!e) e = vt_restore(&m, st, &sv->ds, VT_PARTY_TRAINER, s - 1);
        if (!e) e = vt_run_to_op(&m, st, &sv->ds, VT_PARTY_TRAINER, j, 0, NULL);
        /* each input whole, and - where an operation (of this step or the step before) wrote it -
         * every output of that operation, which its agreed output hash authenticates together
         * (game/vt_game_state.c load_inputs) */
        const vt_opdesc *op = e ? NULL : &m.prog.op[j];
        uint32_t cap = 0;
        for (uint32_t k = 0; op && k < op->n_in; k++) cap += VT_MAX_OP_OUTPUTS;
        jb->t = calloc(cap ? cap : 1, sizeof *jb->t);
        if (!e && !jb->t) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
        for (uint32_t k = 0; op && jb->t && !e && k < op->n_in; k++) {
            int prev;
            uint32_t q = vt_program_producer(&m.prog, j, op->in[k], &prev);
            (void)prev;
            if (q) e = vt_model_wire_tensors(&m, m.prog.op[q].out, m.prog.op[q].n_out, jb->t, cap, &jb->nt);
            else e = vt_model_wire_tensors(&m, &op->in[k], 1, jb->t, cap, &jb->nt);
        }
        if (!e && jb->nt > UINT16_MAX) e = vt_set_error(VT_ERR_LIMIT, "%u input tensors", jb->nt);
    }
    vt_model_free(&m);
    vt_store_close(st);
    return e;
}

void vti_serve_job_clear(job *jb)
{
    if (jb->t) vt_wire_tensors_free(jb->t, jb->nt);
    free(jb->t);
    free(jb->th);
    jb->t = NULL, jb->th = NULL, jb->nt = jb->nth = 0;
}

static void *job_main(void *p)
{
    job *jb = p;
    server *sv = jb->sv;
    vt_err e = job_compute(jb);
    pthread_mutex_lock(&sv->mu);
    if (e) {
        snprintf(jb->err, sizeof jb->err, "%s", vt_errmsg());
        vti_serve_job_clear(jb);
    }
    jb->state = e ? VTI_JOB_FAILED : VTI_JOB_DONE;
    pthread_cond_broadcast(&sv->cv);
    pthread_mutex_unlock(&sv->mu);
    return NULL;
}

static job *job_find(server *sv, int kind, uint64_t a, uint64_t b)
{
    for (int i = 0; i < VTI_JOBS; i++) {
        job *jb = &sv->jobs[i];
        if (jb->used && jb->kind == kind && jb->a == a && jb->b == b && jb->state != VTI_JOB_FAILED) return jb;
    }
    return NULL;
}

/* Starts the computation (kind, a, b) unless it runs or ran already (under mu). NULL with *why when
 * none can start now (too many running, every slot held). */
static job *job_start(server *sv, int kind, uint64_t a, uint64_t b, const char **why)
{
    job *slot = NULL;
    int running = 0;
    for (int i = 0; i < VTI_JOBS; i++) {
        job *jb = &sv->jobs[i];
        running += jb->used && jb->state == VTI_JOB_RUNNING;
        if (jb->used && (jb->state == VTI_JOB_RUNNING || jb->refs)) continue;
        if (!slot || !jb->used || (slot->used && jb->tick < slot->tick)) slot = jb; /* free, else least recently used */
    }
    *why = running >= VTI_JOBS_RUNNING ? "busy: as many recomputations as this trainer runs at once are running; ask again"
           : !slot                     ? "busy: every computation this trainer keeps is in use; ask again"
                                       : NULL;
    if (*why) return NULL;
    vti_serve_job_clear(slot);
    memset(slot, 0, sizeof *slot);
    slot->used = 1, slot->kind = kind, slot->a = a, slot->b = b, slot->sv = sv, slot->state = VTI_JOB_RUNNING;
    slot->tick = ++sv->tick;
    pthread_t th;
    pthread_attr_t at;
    int ok = pthread_attr_init(&at) == 0;
    if (ok) {
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        ok = pthread_create(&th, &at, job_main, slot) == 0;
        pthread_attr_destroy(&at);
    }
    if (!ok) {
        slot->used = 0;
        *why = "busy: the trainer cannot start a computation now; ask again";
        return NULL;
    }
    return slot;
}

/* The computation a question needs, shared by every session (charged to the session's arbiter key
 * only when it starts): waits until it is done, and returns it held (job_release after the answer is
 * sent). NULL after an ERROR answer (*e its send status), or when the session's peer went away while
 * waiting (*e VT_ERR_IO, nothing sent): the computation goes on for the next session that asks. */
job *vti_serve_job_wait(session *ss, int kind, uint64_t a, uint64_t b, uint64_t steps, vt_err *e)
{
    server *sv = ss->sv;
    pthread_mutex_lock(&sv->mu);
    job *jb = job_find(sv, kind, a, b);
    if (!jb) {
        pthread_mutex_unlock(&sv->mu);
        if (vti_serve_charge(ss, steps, e)) return NULL;
        pthread_mutex_lock(&sv->mu);
        const char *why = NULL;
        jb = job_find(sv, kind, a, b); /* another session may have started it meanwhile */
        if (!jb) jb = job_start(sv, kind, a, b, &why);
        if (!jb) {
            pthread_mutex_unlock(&sv->mu);
            *e = vti_serve_send_error_code(ss, VT_ERRC_BUSY, why);
            return NULL;
        }
    }
    jb->refs++;
    jb->tick = ++sv->tick;
    while (jb->state == VTI_JOB_RUNNING) {
        struct timespec ts;
        vt_abstime_after(&ts, 200);
        pthread_cond_timedwait(&sv->cv, &sv->mu, &ts);
        if (jb->state != VTI_JOB_RUNNING) break;
        pthread_mutex_unlock(&sv->mu);
        int gone = vt_conn_wait_readable(ss->c, 0); /* the arbiter sends nothing while it waits: EOF, reset */
        pthread_mutex_lock(&sv->mu);
        if (gone) {
            jb->refs--;
            pthread_mutex_unlock(&sv->mu);
            *e = vt_set_error(VT_ERR_IO, "the arbiter's session ended while its answer was computed");
            return NULL;
        }
    }
    if (jb->state == VTI_JOB_FAILED) {
        char m[sizeof jb->err];
        snprintf(m, sizeof m, "%s", jb->err);
        jb->refs--;
        pthread_mutex_unlock(&sv->mu);
        *e = vti_serve_send_error_code(ss, VT_ERRC_INTERNAL, m);
        return NULL;
    }
    pthread_mutex_unlock(&sv->mu);
    return jb;
}

void vti_serve_job_release(server *sv, job *jb, int forget)
{
    pthread_mutex_lock(&sv->mu);
    jb->refs--;
    if (forget && jb->state == VTI_JOB_DONE) jb->state = VTI_JOB_FAILED; /* never found again: computed anew */
    pthread_mutex_unlock(&sv->mu);
}

/* The chain of a segment between two adjacent committed states, from the cache or computed
 * (charged to the session). Returns 0, or -1 after an ERROR answer (*e its send status). */
int vti_serve_chain_answer(session *ss, const vt_msg_q_chain *qc, int prefix, uint8_t C[32], uint8_t h[32],
                           uint8_t (**hs)[32], uint64_t *total, vt_err *e)
{
    server *sv = ss->sv;
    const vt_recipe *rcp = &sv->rcp;
    uint64_t lo = qc->seg_from, hi = qc->seg_to;
    int f = cache_get(sv, lo, hi, qc->pos, prefix, C, h, hs, total);
    if (f < 0) return *e = vti_serve_send_error_code(ss, VT_ERRC_INTERNAL, "out of memory"), -1;
    if (f == 0) {
        /* only the segments the game asks about: (lo, hi] between adjacent committed states */
        uint64_t gap = rcp->checkpoint_every < rcp->state_hash_every ? rcp->checkpoint_every : rcp->state_hash_every;
        int ok = lo < hi && hi <= rcp->steps && hi - lo <= gap && has_state(rcp, lo) && has_state(rcp, hi);
        for (uint64_t s = lo + 1; ok && s < hi; s++) ok = !has_state(rcp, s);
        if (!ok) {
            char m[200];
            snprintf(m, sizeof m, "no segment (%llu, %llu] between adjacent committed states",
                     (unsigned long long)lo, (unsigned long long)hi);
            *e = vti_serve_send_error_code(ss, VT_ERRC_NO_SUCH, m);
            return -1;
        }
        job *jb = vti_serve_job_wait(ss, VT_MSG_Q_CHAIN, lo, hi, vti_serve_restore_cost(rcp, lo) + (hi - lo), e);
        if (!jb) return -1;
        f = cache_get(sv, lo, hi, qc->pos, prefix, C, h, hs, total);
        vti_serve_job_release(sv, jb, f == 0); /* left the cache already (other segments): computed anew when asked again */
        if (f < 0) return *e = vti_serve_send_error_code(ss, VT_ERRC_INTERNAL, "out of memory"), -1;
        if (f == 0) return *e = vti_serve_send_error_code(ss, VT_ERRC_BUSY, "busy: the chain left the cache; ask again"), -1;
    }
    if (qc->pos > *total || (!prefix && qc->pos < 1)) {
        if (prefix) free(*hs), *hs = NULL;
        *e = vti_serve_send_error_code(ss, VT_ERRC_NO_SUCH, "no such position");
        return -1;
    }
    return 0;
}
