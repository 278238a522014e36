/* vt_step.h - THE step driver: how every party runs one step of a committed run (training,
 * auditing, the trainer's server and the dispute game all come here).
 *
 *   VT_PARTY_TRAINER   record: rounds by the run's rule and writes the step's log (training
 *                      commits it; the trainer's server re-creates what it committed);
 *   VT_PARTY_VERIFIER  strict replay of the step's committed log (auditor verify): any fault fails;
 *   VT_PARTY_AUDITOR   lenient replay (the auditor's side of the game): an implausible or missing
 *                      entry is noted in the fault and the auditor's own rounding is used; a log that
 *                      cannot be used at all (undecodable, another step's, not framed like the step)
 *                      is replaced by the auditor's own rounding and reported as unusable. */
#ifndef VT_STEP_H
#define VT_STEP_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../data/vt_data.h"
#include "../model/vt_model.h"
#include "../rounding/vt_round.h"
#include "../store/vt_store.h"

typedef enum { VT_PARTY_TRAINER = 0, VT_PARTY_AUDITOR = 1, VT_PARTY_VERIFIER = 2 } vt_party;

typedef struct {
    vt_party party;
    vt_store *st;        /* replay: the run store the step's log comes from, when log is NULL */
    vt_steplog *log;     /* record: receives the log (NULL: a scratch log); replay: the step's decoded log
                          * (NULL: loaded from st) */
    uint32_t upto;       /* run operations 1..upto (0: the whole step) */
    vt_op_hook hook;     /* after each operation (may be NULL); m->rctx is the step's rounding context */
    void *hook_ctx;
    void (*redo)(void *hook_ctx); /* AUDITOR: called before an unusable log's step is redone */
    vt_fault *fault;     /* receives the rounding context's fault (may be NULL) */
    int *disputed;       /* AUDITOR: the step met a fault or an unusable log (may be NULL) */
    int *unusable;       /* AUDITOR: the step's log was unusable (may be NULL) */
    vt_rstats *stats;    /* the step's rounding statistics are added here (may be NULL) */
    float *loss;         /* the step's loss, after a whole step (may be NULL) */
} vt_step_args;

/* Runs step m->step + 1 (operations 1..upto) as a->party. */
vt_err vt_step_run(vt_model *m, const vt_dataset *ds, const vt_step_args *a) VT_WARN_UNUSED;

/* Brings m (step <= target) to the state of step `target`: loads the newest checkpoint at or
 * before target from st (when it is past m's step), then runs the steps up to target as party. */
vt_err vt_restore(vt_model *m, vt_store *st, const vt_dataset *ds, vt_party party, uint64_t target) VT_WARN_UNUSED;

#endif
