/* vt_challenge.h - `auditor challenge`: after a rejected verify, play the dispute game. */
#ifndef VT_CHALLENGE_H
#define VT_CHALLENGE_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../kernels/vt_kernels.h"
#include "../model/vt_model.h"

typedef struct {
    const char *run_dir;
    const char *service_path;    /* the trainer's signed service record (default RUN_DIR/service.vtsr) */
    const char *arbiter_addr;
    const char *key_path;        /* the auditor's key (TLS identity and signatures) */
    const char *arbiter_pk_path; /* pin the arbiter's key (required unless no_pin_arbiter) */
    int no_pin_arbiter;          /* 1: accept any arbiter key the trainer's record names (unsafe) */
    const char *data_root;
    const char *init_path;       /* a run started from a file: that file (NULL: RUN_DIR/init.safetensors) */
    const char *transcript;      /* optional: write the auditor's transcript here */
    vt_order order;
    uint64_t step;               /* 0: find the first bad committed step by replaying */
    int deadline_ms;
    int wait_ms;                 /* how long to keep retrying an arbiter that answers busy (0: deadline_ms) */
    int quiet;
    uint64_t until;              /* with step 0: replay only up to the first committed state at or
                                  * after this step (0: the last step) */
    const vt_hooks *hooks;       /* tests only (tests/tools/vt_cheats.c: a lying auditor); NULL */
    int answer_delay_ms;         /* tests only (auditor-test --slow): each answer this late; 0 */
} vt_challenge_opts;

typedef struct {
    int decided;        /* a verdict arrived */
    int loser;          /* VT_LOSER_* */
    int reason_code;
    uint64_t step;
    uint32_t op;
    char reason[1100];
    uint64_t claimed_step;
    uint64_t questions;  /* questions the auditor answered */
    double seconds;
} vt_challenge_result;

vt_err vt_challenge_run(const vt_challenge_opts *o, vt_challenge_result *res) VT_WARN_UNUSED;

#endif
