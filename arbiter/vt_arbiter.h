/* vt_arbiter.h - `arbiter serve` (referee live games) and `arbiter check` (re-derive a
 * verdict offline from a transcript). */
#ifndef VT_ARBITER_H
#define VT_ARBITER_H

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
    int max_games;              /* stop after this many games (0 = forever) */
    const char *port_file;
    int quiet;
} vt_arbiter_opts;

vt_err vt_arbiter_serve(const vt_arbiter_opts *o) VT_WARN_UNUSED;

/* Replays the game recorded in path: every signature, every question and the verdict must
 * be reproduced. *res gets the re-derived result; *matches = 1 when it equals the recorded
 * verdict. */
vt_err vt_arbiter_check(const char *path, const char *data_root, vt_order order, vt_game_result *res,
                        int *matches) VT_WARN_UNUSED;

#endif
