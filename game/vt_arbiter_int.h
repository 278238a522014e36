/* vt_arbiter_int.h - private to game/: what the arbiter's game threads (vt_arbiter.c) and its
 * admission queue (vt_arbiter_admit.c) share: the server, its game slots, finished games and
 * waiting challenges, and the job a game thread starts with; and the trainer's session-ending
 * ERROR, which the live game and `arbiter check` (vt_arbiter_check.c) read alike. */
#ifndef VT_ARBITER_INT_H
#define VT_ARBITER_INT_H

#include <pthread.h>
#include <stdint.h>

#include "../protocol/vt_proto.h"
#include "vt_arbiter.h"
#include "vt_game.h"

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

/* An ERROR by which the trainer's server ended a session rather than refused a question: idle too
 * long, evicted for a newer session, no session free, or its own failure. It says nothing about
 * the run: the arbiter reconnects and asks again (within the trainer's clock). */
static inline int vti_session_error(const vt_msg *m)
{
    if (m->hdr.type != VT_MSG_ERROR) return 0;
    int c = m->body.error.code;
    return c == VT_ERRC_TIMEOUT || c == VT_ERRC_BUSY || c == VT_ERRC_INTERNAL;
}

/* vt_arbiter.c: the thread of one game (a game_job, freed by it). */
void *vti_arbiter_game_main(void *p);

/* vt_arbiter_admit.c: a game ended: its slot is free (its verdict kept for a CHALLENGE sent again; v
 * NULL when it never ran), and the oldest waiting challenge that fits now starts. */
void vti_arbiter_game_done(server *S, const char *ip, int slot, const vt_msg_verdict *v);

/* vt_arbiter_admit.c: 1 when a challenge of commitment cm waits for a slot (under S->mu). */
int vti_arbiter_waiting_for(server *S, const uint8_t cm[32]);

#endif
