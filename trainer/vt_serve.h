/* vt_serve.h - `trainer serve`: answers the arbiter's questions about a committed run. */
#ifndef VT_SERVE_H
#define VT_SERVE_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../kernels/vt_kernels.h"
#include "../model/vt_model.h"

typedef struct {
    const char *run_dir;
    const char *key_path;   /* the trainer's signing key: also its TLS identity */
    const char *data_root;
    const char *listen;     /* "HOST:PORT" */
    vt_order order;         /* the order the run was trained with (to re-create its values) */
    vt_cheat cheat;         /* tests: the cheat the run was trained with, so answers stay consistent */
    int max_clients;        /* concurrent connections (default 8) */
    int idle_ms;            /* a client silent this long is dropped (default 60000) */
    int max_connections;    /* stop after this many connections (0 = serve forever; tests) */
    const char *port_file;  /* write the bound port here once listening (tests) */
    int quiet;
    /* testing only: misbehave (see docs/dispute.md) */
    int misbehave;          /* VT_SERVE_* */
} vt_serve_opts;

enum {
    VT_SERVE_HONEST = 0,
    VT_SERVE_SILENT,        /* never answer (the arbiter's deadline must fire) */
    VT_SERVE_BAD_PROOF,     /* corrupt every inclusion proof */
    VT_SERVE_INCONSISTENT,  /* claim chain hashes inconsistent with the commitment */
    VT_SERVE_DROP_ONCE,     /* drop the first connection after a few answers (the arbiter reconnects) */
};

/* Serves until max_connections were handled (or forever). */
vt_err vt_serve_run(const vt_serve_opts *o) VT_WARN_UNUSED;

#endif
