/* vt_serve.h - `trainer serve`: answers the arbiter's questions about a committed run. */
#ifndef VT_SERVE_H
#define VT_SERVE_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../kernels/vt_kernels.h"
#include "../model/vt_model.h"
#include "vt_game.h"

#define VT_SERVE_MAX_ARBITERS 16
#define VT_SERVE_CACHE_MAX 64
/* The recomputation budget of one arbiter key: a bucket of this many games' budgets
 * (--max-recompute-steps), refilled one budget every VT_SERVE_REFILL_S seconds. */
#define VT_SERVE_BUCKET_GAMES 4
#define VT_SERVE_REFILL_S 60
/* The shortest record lifetime `trainer serve` signs: twice the floor (game/vt_game.h), since it
 * re-signs when half is left, so a record it serves always has the floor left. */
#define VT_SERVE_MIN_TTL_S (2 * VT_RECORD_FLOOR_S)

typedef struct {
    const char *run_dir;
    const char *key_path;   /* the trainer's signing key: also its TLS identity */
    const char *data_root;
    const char *listen;     /* "HOST:PORT" */
    const char *advertise;  /* the address signed into the service record (default: the listen
                             * host with the bound port; required when listening on every address) */
    const char *service_file; /* where the service record goes (default RUN_DIR/service.vtsr) */
    int record_ttl_s;       /* the record's lifetime, seconds (default 7 days); re-signed (a higher serial,
                             * a later expiry) whenever less than half of it is left */
    vt_order order;         /* the order the run was trained with (to re-create its values) */
    const vt_hooks *hooks;  /* tests only: the cheat the run was trained with (answers stay consistent); NULL */
    /* access control: only these arbiters' keys get answers (at least one) */
    uint8_t arbiter_pk[VT_SERVE_MAX_ARBITERS][32];
    int n_arbiters;
    int max_sessions;       /* sessions at once, all arbiters together (default 16) */
    int sessions_per_arbiter; /* of those, for one arbiter key (default 8) */
    int idle_ms;            /* a session silent this long is closed (default 60000) */
    uint64_t max_recompute_steps; /* steps one game may make the trainer recompute (0: automatic,
                                   * 8 x checkpoint_every + 4 x the gap between committed states + 16);
                                   * each arbiter key has a bucket of VT_SERVE_BUCKET_GAMES of these */
    int chain_cache;        /* segment chains kept for every session (default 4, at most 64) */
    int handshake_ms;       /* TLS handshake deadline (default 3000) */
    int max_pending;        /* connections not yet authenticated (default 64) */
    int pending_per_ip;     /* of those, from one IP address (default 16) */
    int max_connections;    /* stop after this many sessions (0 = serve forever; tests) */
    const char *port_file;  /* write the bound port here once listening (tests) */
    int quiet;
    const struct vt_serve_hooks *serve_hooks; /* tests only: a misbehaving server; NULL */
} vt_serve_opts;

/* Test hooks of the server (tests/tools/vt_cheats.c plays a misbehaving trainer with them; no
 * production program sets any). Each may be NULL. */
typedef struct vt_serve_hooks {
    int (*silent)(void *ctx);                                  /* 1: leave this question unanswered */
    void (*tamper)(void *ctx, uint16_t type, void *answer);   /* change an answer (its vt_msg_* body) before it is sent */
    int (*drop)(void *ctx, int answered);                      /* 1: drop the connection now */
    int (*short_record)(void *ctx);                            /* 1: sign records shorter than the floor */
    void *ctx;
} vt_serve_hooks;

/* Serves until max_connections sessions were handled (or forever). */
vt_err vt_serve_run(const vt_serve_opts *o) VT_WARN_UNUSED;

#endif
