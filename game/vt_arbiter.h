/* vt_arbiter.h - `arbiter serve` (referee live games) and `arbiter check` (re-derive a
 * verdict offline from a transcript). */
#ifndef VT_ARBITER_H
#define VT_ARBITER_H

#include <stddef.h>

#include "../common/vt_error.h"
#include "../kernels/vt_kernels.h"
#include "vt_game.h"

typedef struct {
    const char *listen;
    const char *key_path;
    const char *data_root;
    const char *transcript_dir; /* one transcript file per game (default: the working directory) */
    vt_order order;             /* the arbiter's own evaluation order */
    int deadline_ms;            /* per answer (default 30000) */
    int clock_ms;               /* each party's clock for the whole game (default 300000; >= deadline_ms) */
    int max_games;              /* stop after this many games (0 = forever) */
    int max_running;            /* games played at once (default 4) */
    int games_per_ip;           /* of those, challenged from one IP address (default 2) */
    int games_per_commitment;   /* of those, about one commitment (default 2); one per auditor key */
    int max_game_mb;            /* memory a game may need, from its manifest (default 512) */
    int max_op_mflop;           /* the largest operation it may recompute, in Mflop (default 20000) */
    int max_work_s;             /* the most recomputation time a game may grant a party (default 7200) */
    int heartbeat_ms;           /* a NOTE to the auditor this often while the trainer computes (0: the default) */
    int min_mflops;             /* the rate floor at which a party's recomputation is granted time, in Mflop of
                                 * the program's costs per second (default VT_GAME_MIN_RATE / 1e6 = 200) */
    int challenge_ms;           /* a client must send its CHALLENGE this soon after its handshake (default 5000) */
    int handshake_ms;           /* TLS handshake deadline (default 3000) */
    int max_pending;            /* connections not yet authenticated (default 64) */
    int pending_per_ip;         /* of those, from one IP address (default 16) */
    const char *port_file;
    int quiet;
    const double *tc_factor;    /* the GEMM arithmetics' weights set by the operator (--tc-factor MODE=X), by
                                 * gemm_arith value, 0 where not set (NULL: none); the others calibrated */
    int no_calibrate;           /* 1: the weights not set are vt_arith_default_factor's (--no-calibrate) */
} vt_arbiter_opts;

/* How often the auditor hears from the arbiter while the trainer computes an answer (default of
 * vt_arbiter_opts.heartbeat_ms). */
#define VT_ARBITER_HEARTBEAT_MS 20000
vt_err vt_arbiter_serve(const vt_arbiter_opts *o) VT_WARN_UNUSED;

/* What `arbiter check` found (docs/dispute.md "Offline check"). */
typedef struct {
    int matches;            /* 1: the recorded verdict is re-derived (decision and every field binding it) */
    int valid;              /* 1: matches, and the verdict binds: signed by the key it names, that key the pinned
                             * one (when one is pinned), and, against the trainer, one its record accepts */
    uint8_t arbiter_pk[32]; /* the key that signed the arbiter's records */
    char refused[640];      /* why a re-derived verdict is not valid (empty otherwise) */
    char rests_on[1400];    /* what the verdict rests on: the parties' signed messages, or, for a verdict
                             * by deadline, the arbiter's own signed account (NOTE records) */
} vt_check_report;

/* Replays the game recorded in path: every signature, every question and the verdict must be
 * reproduced. pinned_pk: the arbiter key the caller trusts (NULL: none pinned). *res gets the
 * re-derived result, *rep what was found. */
vt_err vt_arbiter_check(const char *path, const char *data_root, vt_order order, const uint8_t *pinned_pk,
                        vt_game_result *res, vt_check_report *rep) VT_WARN_UNUSED;

#endif
