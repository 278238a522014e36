/* vt_audit.h - the auditor's job as a library: check a run directory by replaying it. */
#ifndef VT_AUDIT_H
#define VT_AUDIT_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../dist/vt_dist.h"
#include "../kernels/vt_kernels.h"

typedef enum {
    VT_VERDICT_VERIFIED = 0, /* exit 0 */
    VT_VERDICT_REJECTED = 1, /* exit 1: evidence against the run */
    VT_VERDICT_CANNOT = 2,   /* exit 2: unreadable or corrupt input, or a local problem */
} vt_verdict;

/* Completeness: a VERIFIED run has every step's record (its leaf under the signed root; its loss
 * and log entry count, which the leaf does not commit, equal to the replay's and the committed
 * log's; step 0's zero), every log, and every checkpoint the recipe promises (every
 * checkpoint_every steps and the last, so the final state is exportable) equal to the replayed
 * state. A missing promised checkpoint is REJECTED ("incomplete run"). The model's memory, times
 * the parallel replays, is held to the budget (vt_model_memory_budget): --jobs is reduced to fit,
 * and a model beyond it is CANNOT ("memory budget"). */
typedef struct {
    const char *run_dir;
    const char *data_root;   /* NULL: $VT_DATA_DIR or the repository's data/ */
    const char *recipe_path; /* optional: the recipe the client asked for */
    const char *pubkey_path; /* optional: the trainer key the client trusts */
    const char *init_path;   /* optional: the initial state's file of a run trained with --init (default: the
                              * run directory's copy, init.safetensors); refused for a run without one */
    const char *model_path;  /* optional: the client's own ONNX file (trainer train --model): the run must
                              * train exactly its graph (the file's hash, the graph the manifest carries, with
                              * the recipe's loss and frozen parameters) from its initializers (unless
                              * init_path names the client's own initial state) */
    vt_order order;          /* the auditor's own evaluation order */
    const char *backend;     /* "cpu" (NULL: the default) or "cuda": each segment's replay opens its own */
    uint64_t from, to;       /* segment: replay steps from+1..to (to = 0: the last step) */
    int jobs;                /* parallel segment replays (>= 1) */
    int quiet;
    vt_comm *comm;           /* NULL (or one rank): one process; under mpirun the segments are split over the
                              * ranks (each replays its share with `jobs` threads) and every rank gets the
                              * same result (docs/distributed.md "Audit on several ranks") */
} vt_audit_opts;

typedef struct {
    vt_verdict verdict;
    char reason[48];        /* short stable code, e.g. "state mismatch" */
    char detail[640];       /* human explanation */
    int64_t step;           /* first bad step, -1 when none */
    int64_t op;             /* operation id, -1 when it cannot be told */
    char op_name[48];
    int64_t index;          /* element index, -1 when none */
    uint64_t steps_total, steps_checked;
    uint64_t entries_applied, checks_passed;
    uint64_t from, to;
    char order[16];
    double seconds;
    int complete;           /* verified over the whole run (not a segment): every stored field checked */
    double memory_need, memory_budget; /* bytes: one replay's model; the budget it was held to */
    int has_commitment;     /* the commitment was read: the two hashes below are its (the run the verdict is about) */
    uint8_t merkle_root[32], manifest_hash[32];
} vt_audit_result;

/* Never fails itself: every problem becomes a verdict in *res. */
void vt_audit_run(const vt_audit_opts *o, vt_audit_result *res);

/* JSON report of a result (malloc'd text). */
char *vt_audit_report_json(const vt_audit_result *r);

#endif
