/* vt_serve_int.h - private to game/: what the trainer's server (vt_serve.c: sessions, answers,
 * the service) shares with its computations (vt_serve_jobs.c: the jobs that outlive a session, the
 * chain cache): the server, a session, a job. */
#ifndef VT_SERVE_INT_H
#define VT_SERVE_INT_H

#include <pthread.h>
#include <stdint.h>

#include "../protocol/vt_proto.h"
#include "../store/vt_store.h"
#include "vt_dispute.h"
#include "vt_serve.h"

typedef struct session session;
typedef struct server server;

typedef struct {
    vt_seg_chain ch;
    uint64_t used;
} cache_ent;

/* One computation a question needs (docs/dispute.md "Connections are not parties"): keyed by the
 * question (kind: VT_MSG_Q_CHAIN for a segment's chain, Q_INPUTS, Q_TENSORS; a, b), run by a worker
 * thread of its own, so that it survives the session that asked for it; any session of any
 * accepted arbiter asking the same question waits for it instead of starting it again. A chain's
 * result goes to the chain cache; an INPUTS or TENSORS answer stays in the job until it is evicted
 * (least recently used, never while a session holds it). */
typedef struct {
    int used, kind, state; /* state: VTI_JOB_RUNNING, _DONE, _FAILED */
    uint64_t a, b, tick;
    int refs;              /* sessions holding it (waiting for it or sending its answer) */
    char err[512];
    vt_msg_tensor *t;      /* Q_INPUTS: the wire tensors */
    uint32_t nt;
    uint8_t (*th)[32];     /* Q_TENSORS: the tensor hashes */
    uint32_t nth;
    server *sv;
} job;
enum { VTI_JOB_RUNNING = 0, VTI_JOB_DONE = 1, VTI_JOB_FAILED = 2 };
#define VTI_JOBS 16        /* computations kept (running or done) */
#define VTI_JOBS_RUNNING 4 /* computations running at once; beyond: ERROR busy, the arbiter asks again */
#define VTI_PUBLIC 4       /* keys that are not an arbiter's, served at once (one Q_SERVICE each) */
#define VTI_PUBLIC_MS 3000 /* the time such a key has to ask each question */
#define VTI_PUBLIC_QUESTIONS 4 /* Q_SERVICE questions such a key may ask on one connection */

struct server {
    const vt_serve_opts *o;
    vt_keypair kp;
    vt_recipe rcp;
    vt_dataset ds;
    vt_merkle tree;
    char *manifest;
    size_t manifest_len;
    uint8_t commitment[VT_MSG_COMMITMENT_LEN]; /* the commitment file this server stands behind */
    uint64_t budget;                           /* recomputed steps one game may need (the bucket refills
                                                * this many per VT_SERVE_REFILL_S seconds) */
    double tokens[VT_SERVE_MAX_ARBITERS];      /* per accepted arbiter key: steps it may have recomputed now */
    double refilled[VT_SERVE_MAX_ARBITERS];    /* when its bucket was last refilled (vt_now) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int active, handled, dropped;
    session *sessions[256];
    cache_ent cache[VT_SERVE_CACHE_MAX];
    int n_cache, max_cache;
    uint64_t tick;
    /* the signed service record (docs/dispute.md "Fresh service records"), re-signed before it expires */
    vt_service rec;                   /* what it says (serial, expiry, arbiters, address) */
    uint8_t rec_bytes[VT_SERVICE_MAX_LEN];
    size_t rec_len;                   /* under mu */
    char rec_path[4096];
    uint64_t rec_resign_at;           /* seconds since 1970 */
    int rec_failed;                   /* a re-signing failed (logged once) */
    job jobs[VTI_JOBS];               /* under mu */
    int public_active;                /* sessions answering Q_SERVICE to a key that is not an arbiter's */
};

struct session {
    server *sv;
    vt_conn *c;
    vt_store *st;
    uint8_t pk[32];
    char peer[80];
    double last; /* last activity (vt_now) */
    int evicted;
    int arb;        /* the index of its arbiter key (vt_serve_opts.arbiter_pk) */
    int busy;       /* answering a question now: never evicted (its arbiter's game would lose the work) */
};

/* Steps a restore to step s recomputes (from the checkpoint at or before it). */
static inline uint64_t vti_serve_restore_cost(const vt_recipe *rcp, uint64_t s) { return s % rcp->checkpoint_every; }

/* vt_serve.c: answers ERROR (code, what) to the session, and logs the refusal. */
vt_err vti_serve_send_error_code(session *ss, int code, const char *what);

/* vt_serve.c: charges `steps` of recomputation to the session's arbiter key, or refuses (ERROR, -1). */
int vti_serve_charge(session *ss, uint64_t steps, vt_err *e);

/* vt_serve_jobs.c: a job's results freed, its entry unused. */
void vti_serve_job_clear(job *jb);

/* vt_serve_jobs.c: the job of question (kind, a, b), started if it is not running or done (after
 * charging `steps` to the session's key), waited for; held (refs) until vti_serve_job_release. NULL
 * with *e after an ERROR answer was sent or the session failed. */
job *vti_serve_job_wait(session *ss, int kind, uint64_t a, uint64_t b, uint64_t steps, vt_err *e);

/* vt_serve_jobs.c: lets a held job go (forget: its entry is cleared). */
void vti_serve_job_release(server *sv, job *jb, int forget);

/* vt_serve_jobs.c: the chain claim (prefix 0) or prefix (1) of question qc, from the cache or a job.
 * -1 with *e after an ERROR answer was sent or the session failed. */
int vti_serve_chain_answer(session *ss, const vt_msg_q_chain *qc, int prefix, uint8_t C[32], uint8_t h[32],
                           uint8_t (**hs)[32], uint64_t *total, vt_err *e);

#endif
