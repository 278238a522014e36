/* vt_train.h - the trainer's job as a library: train a recipe into a run directory. */
#ifndef VT_TRAIN_H
#define VT_TRAIN_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../dist/vt_dist.h"
#include "../kernels/vt_kernels.h"
#include "../model/vt_model.h"
#include "../arch/vt_recipe.h"

#define VT_TRAIN_READER_WAIT_S 60

typedef struct {
    const char *run_dir;
    const char *key_path;   /* Ed25519 secret key file (trainer keygen) */
    const char *data_root;  /* NULL: $VT_DATA_DIR or the repository's data/ */
    int init_layout;        /* VT_INIT_AUTO, _PROJECT or _TORCH (run/vt_init.h): how --init's file is laid out */
    const char *init_path;  /* --init: the initial state from this safetensors file (run/vt_init.h); NULL:
                             * the recipe's (on resume: the run's copy, when it has one) */
    vt_order order;         /* evaluation order of this trainer (default: blas) */
    const char *backend;    /* "cpu" (NULL: the default) or "cuda" (backend/vt_backend.h) */
    int resume;             /* continue an interrupted run from its newest usable checkpoint */
    int reader_wait_s;      /* how long the end of training waits for readers holding an older snapshot
                             * of run.db before failing (vt_store_finish); 0: VT_TRAIN_READER_WAIT_S */
    int quiet;
    uint64_t stop_after;    /* stop (without committing: an interruption) after this step; 0 = never */
    const vt_hooks *hooks;  /* tests only (tests/tools/vt_cheats.c: a cheating trainer); NULL */
    vt_comm *comm;          /* data-parallel training (docs/distributed.md): the ranks (every rank calls
                             * vt_train_run with the same recipe and options; rank 0 alone writes the
                             * run); NULL or one rank: the one-process run */
    int shard_state;        /* --shard-state (several ranks): each rank holds and updates 1/N of the optimiser
                             * state and of the parameters, then the parameters are allgathered
                             * (vt_model_init_sharded; the same commitment); one rank: ignored (the whole
                             * state is the rank's); refused with a backend other than the CPU */
} vt_train_opts;

typedef struct {
    uint64_t steps;          /* steps in the run */
    uint64_t resumed_from;   /* checkpoint step resumed from (resume only) */
    float final_loss;
    uint64_t log_entries, log_bytes, rounded;
    uint64_t log_steps;      /* the steps whose logs log_bytes counts */
    uint64_t exact;          /* exact rounding: elements computed by the exact accumulator */
    double seconds;
    uint8_t root[32];
    int committed;           /* 1 when the commitment file was written */
    int finished;            /* resume: the run was already finished (every step stored and committed);
                              * nothing was trained or written, the figures are the store's and root
                              * is its commitment's */
    int ranks;               /* the ranks that trained (1: one process) */
    uint64_t dist_sums, dist_exact; /* ranks > 1: the sums rounded across the ranks (this rank's count,
                                     * the same on every rank), of these settled by the exact phase */
    uint64_t dist_bytes;     /* ranks > 1: the bytes all ranks together sent for them */
    int sharded;             /* the optimiser state was sharded over the ranks (--shard-state, ranks > 1) */
    uint64_t state_bytes;    /* the bytes of the state this rank holds (planned: vt_model_need), the optimiser's */
    uint64_t opt_bytes;      /* of these; with a sharded state its share, rank 0's at committed states aside */
    uint64_t state_total, opt_total; /* the whole state's bytes, the optimiser state's */
    uint64_t model_bytes;    /* this rank's whole planned allocation (vt_model_need: state, tensors, scratch) */
    int err_common;          /* on failure: 1 when every rank returns this same error (print it once) */
} vt_train_result;

/* Trains and commits. With o->comm of more than one rank (collective: every rank calls it), the
 * recipe's batch is split across the ranks (vt_model_set_shard; refused before anything is written
 * when it does not divide, with rounding=log or a GPU backend), rank 0 alone writes the run store,
 * the checkpoints and the commitment (the one-process run's bytes: the manifest names the global
 * batch, never the rank count), the other ranks start from rank 0's state (fresh or resumed), every
 * rank stops with the lowest failing rank's error (its message names that rank), and the ranks
 * compare their state hashes at every committed state (a rank whose state differs from rank 0's
 * stops the run, named). Errors: VT_ERR_DIVERGED (training diverged: message names step and
 * operation), VT_ERR_IO/FORMAT/DB (inputs; VT_ERR_IO also when another trainer holds the run
 * directory, or when readers kept run.db from being made self-contained: then nothing is committed
 * and --resume commits), VT_ERR_ARG (recipe). Resuming a finished run changes nothing and reports
 * it (res->finished). The commitment is written only once run.db holds every step. */
vt_err vt_train_run(const vt_recipe *rcp, const vt_train_opts *o, vt_train_result *res) VT_WARN_UNUSED;

/* The dataset spec "NAME" or "NAME:N" for a recipe (into buf). */
void vt_recipe_dataset_spec(const vt_recipe *rcp, char *buf, size_t cap);

#endif
