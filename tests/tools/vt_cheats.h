/* vt_cheats.h - test-only adversaries: a cheating trainer, a misbehaving trainer's server and a
 * lying auditor, played through the production drivers' hooks (vt_hooks, vt_serve_hooks).
 *
 * Linked only into the test builds of the programs (trainer-test, auditor-test: the same main.c
 * compiled with VT_TEST_HOOKS, tests/tests.cmake) and into tests; no production binary contains
 * this code. The options they add:
 *   trainer-test train|serve --cheat KIND:STEP[:VALUE]
 *       lr (step STEP uses learning rate VALUE, default 0.5), poison (add VALUE, default 1e-3, to
 *       every element of the first parameter's gradient: fc1.weight, stem.conv.weight),
 *       flip-weight (flip the lowest bit of the first parameter's first element after its
 *       update), flip-buffer (the same for the first buffer, a running mean, after the running
 *       statistics' update), dropout-seed (the step's first dropout drawn with another seed),
 *       swap-window (the step's first text window replaced by the one a token later), reorder (the batch's first example replaced by the next one of the dataset),
 *       flip-direction (the step log's first direction entry), omit-entry (every entry of the
 *       step's log), augment-seed (the step's augmentation drawn with another seed), pad-log (a
 *       direction entry on each of the first VALUE elements without an entry of every operation
 *       record, default 1: entries the rule does not need, the values untouched), shift-op
 *       (STEP:OP: 0.25 added to every element of operation OP's F32 output; another dtype's first
 *       element has its lowest bit flipped), arith (STEP:V: the step's operations after the first
 *       in gemm_arith V, an index of vt_gemm_arith_names: a step of another arithmetic) - a trainer
 *       that deviates at STEP and commits consistently;
 *   trainer-test train --cheat skew-kind:NAME
 *       a build that computes other bits: the lowest bit of the first byte of the first output of
 *       every operation of kind NAME (ops/vt_kinds.h) flipped, at every step and in the start-up
 *       known-answer probe (vt_hooks.probe_op; the ranks' agreement, docs/distributed.md);
 *   trainer-test train --stop-after STEP   stop without committing (an interruption);
 *   trainer-test serve --misbehave silent|bad-proof|inconsistent|drop-once|huge-hashes|huge-inputs|short-record
 *       (short-record: --record-ttl below the floor is signed, a cheater's short record lifetime);
 *   auditor-test challenge --lie STEP:OP[:shift]   a lying auditor: its output of operation OP of
 *       step STEP has its first element's lowest bit flipped (:shift: as the trainer's shift-op),
 *       consistently in every answer;
 *   auditor-test challenge --slow MS   a slow auditor: each answer MS late (game/vt_challenge.c). */
#ifndef VT_CHEATS_H
#define VT_CHEATS_H

#include <pthread.h>
#include <stdint.h>

#include "../../common/vt_error.h"
#include "../../game/vt_serve.h"
#include "../../model/vt_model.h"

typedef enum {
    VT_CHEAT_NONE = 0,
    VT_CHEAT_LR,
    VT_CHEAT_POISON,
    VT_CHEAT_FLIP_W,
    VT_CHEAT_REORDER,
    VT_CHEAT_FLIP_OUTPUT,
    VT_CHEAT_FLIP_DIRECTION,
    VT_CHEAT_OMIT_ENTRY,
    VT_CHEAT_AUGMENT_SEED,
    VT_CHEAT_FLIP_BUFFER,
    VT_CHEAT_DROPOUT_SEED,
    VT_CHEAT_SWAP_WINDOW,
    VT_CHEAT_PAD_LOG,
    VT_CHEAT_SHIFT_OUTPUT,
    VT_CHEAT_ARITH,
    VT_CHEAT_SKEW_KIND,
} vt_cheat_kind;

typedef enum { VT_MISBEHAVE_NONE = 0, VT_MISBEHAVE_SILENT, VT_MISBEHAVE_BAD_PROOF, VT_MISBEHAVE_INCONSISTENT,
               VT_MISBEHAVE_DROP_ONCE, VT_MISBEHAVE_HUGE_HASHES, VT_MISBEHAVE_HUGE_INPUTS,
               VT_MISBEHAVE_SHORT_RECORD } vt_misbehave;

typedef struct {
    vt_cheat_kind kind;
    uint64_t step;
    double value;
    uint32_t op;          /* FLIP_OUTPUT */
    uint16_t skew_kind;   /* SKEW_KIND: the kind's id */
    int arith_old;        /* ARITH: the run's gemm_arith, restored after the step */
    int done;             /* DROPOUT_SEED: once per step (reset when the step begins) */
    vt_misbehave serve;
    pthread_mutex_t mu;   /* drop-once: one drop over every session */
    int dropped;
    vt_hooks hooks;       /* point the drivers' options here */
    vt_serve_hooks serve_hooks;
} vt_cheats;

void vt_cheats_init(vt_cheats *c);
/* "KIND:STEP[:VALUE]" (--cheat). */
vt_err vt_cheats_parse(vt_cheats *c, const char *spec) VT_WARN_UNUSED;
/* "STEP:OP" (--lie). */
vt_err vt_cheats_lie(vt_cheats *c, const char *spec) VT_WARN_UNUSED;
/* silent, bad-proof, inconsistent, drop-once, huge-hashes, huge-inputs (--misbehave; the huge
 * ones answer HASHES / INPUTS at the protocol's maximal size). */
vt_err vt_cheats_misbehave(vt_cheats *c, const char *name) VT_WARN_UNUSED;

#endif
