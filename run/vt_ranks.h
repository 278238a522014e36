/* vt_ranks.h - the ranks of a data-parallel run agree on everything that changes their collectives
 * or their bits, before anything is written (docs/distributed.md "Ranks agree before anything is
 * written"). */
#ifndef VT_RANKS_H
#define VT_RANKS_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../dist/vt_dist.h"
#include "../kernels/vt_kernels.h"
#include "../model/vt_model.h"

/* What this rank starts with: the options that decide which collectives run and their sizes, and
 * what it computes. */
typedef struct {
    int shard_state;        /* --shard-state */
    const char *backend;    /* --backend: "cpu" or "cuda" */
    const char *engine;     /* the data collectives' engine this rank would install: "nccl" or "mpi" */
    int resume;             /* --resume */
    uint64_t stop_after;    /* --stop-after (test builds; 0: none) */
    const char *manifest;   /* the manifest this rank built (recipe, dataset, --init file) */
    const vt_program *prog; /* its step program */
    vt_order order;         /* its evaluation order (the probe runs in it) */
    const vt_hooks *hooks;  /* tests only: probe_op tampers with the probe (NULL: none) */
} vt_ranks_start;

/* Collective, and the first collective of a data-parallel run: every rank calls it with its own
 * start, whatever its options. Each rank runs the known-answer probe (model/vt_probe.h) and builds
 * its record - the options above, its build's identity (code version, manifest format, step
 * program versions, the kind list, the probe's version, the distributed rounding's round size, the
 * compiler's floating-point settings), the SHA-256 of its manifest and of its step program's
 * description, the output hash of every operation the probe ran, in that order - and the records
 * are gathered to every rank
 * (vt_dist_allgather_blocks). Every rank compares every rank's record with rank 0's and returns the
 * same outcome: VT_OK when all are equal; otherwise the lowest rank R that differs, named with the
 * first thing that differs and the other ranks that differ too:
 *   an option: VT_ERR_ARG, "rank 1 of 2 has --shard-state, rank 0 does not: ...";
 *   the build or the step program: VT_ERR_ARG, "rank 1 of 2 runs another build than rank 0: ...";
 *   the manifest: VT_ERR_ARG, "rank 1 of 2: its manifest (recipe, dataset or --init file) differs ...";
 *   a probe hash: VT_ERR_MISMATCH, "rank 1 of 2: its known-answer probe of kind gelu differs from
 *   rank 0's (operation 28 of the probe's gpt program: ...)", the kind of the first operation that
 *   differs (those after it compute from its outputs).
 * A rank whose probe fails stops every rank with its error (vt_dist_agree). On failure *common = 1
 * when the error returned is every rank's, 0 for this rank's own (an MPI failure); on success 0. */
vt_err vt_ranks_agree(vt_comm *c, const vt_ranks_start *s, int *common) VT_WARN_UNUSED;

#endif
