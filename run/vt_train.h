/* vt_train.h - the trainer's job as a library: train a recipe into a run directory. */
#ifndef VT_TRAIN_H
#define VT_TRAIN_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../kernels/vt_kernels.h"
#include "../model/vt_model.h"
#include "../model/vt_recipe.h"

enum {
    VT_LOGCHEAT_NONE = 0,
    VT_LOGCHEAT_FLIP_DIRECTION, /* flip the first direction entry of the step's log */
    VT_LOGCHEAT_OMIT_ENTRY,     /* delete every entry of the step's log */
};


typedef struct {
    const char *run_dir;
    const char *key_path;   /* Ed25519 secret key file (trainer keygen) */
    const char *data_root;  /* NULL: $VT_DATA_DIR or the repository's data/ */
    vt_order order;         /* evaluation order of this trainer (default: blas) */
    int resume;             /* continue an interrupted run from its last checkpoint */
    int quiet;
    uint64_t stop_after;    /* testing: stop (without committing) after this step; 0 = never */
    /* testing only: play a cheating trainer that deviates at one step and commits the result
     * consistently (docs/dispute.md). VT_CHEAT_NONE for an honest run. */
    vt_cheat cheat;
    int cheat_log;          /* VT_LOGCHEAT_*: tamper with the log of step cheat_log_step */
    uint64_t cheat_log_step;
} vt_train_opts;

typedef struct {
    uint64_t steps;          /* steps in the run */
    uint64_t resumed_from;   /* checkpoint step resumed from (resume only) */
    float final_loss;
    uint64_t log_entries, log_bytes, rounded;
    uint64_t exact;          /* exact rounding: elements computed by the exact accumulator */
    double seconds;
    uint8_t root[32];
    int committed;           /* 1 when the commitment file was written */
} vt_train_result;

/* Parse "KIND:STEP[:VALUE]" (KIND: lr, poison, flip-weight, reorder, flip-direction,
 * omit-entry) into o's cheat fields. */
vt_err vt_train_parse_cheat(const char *spec, vt_train_opts *o) VT_WARN_UNUSED;

/* Trains and commits. Errors: VT_ERR_DIVERGED (training diverged: message names step and
 * operation), VT_ERR_IO/FORMAT/DB (inputs), VT_ERR_ARG (recipe). */
vt_err vt_train_run(const vt_recipe *rc, const vt_train_opts *o, vt_train_result *res) VT_WARN_UNUSED;

/* The dataset spec "NAME" or "NAME:N" for a recipe (into buf). */
void vt_recipe_dataset_spec(const vt_recipe *rc, char *buf, size_t cap);

#endif
