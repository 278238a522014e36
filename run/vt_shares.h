/* vt_shares.h - the trainer's --threads N as N in-process shares of the batch, combined as ranks
 * are (docs/architecture.md "Threads", docs/distributed.md): N threads, each one rank of an
 * in-process communicator (vt_dist_threads_open), each running vt_train_run on its b = B / N
 * examples of every step; the sums over the batch rounded across the shares by the distributed
 * exact rounding (vt_round_dist), so every rounded value, the run store and the commitment are the
 * one-process run's. Share 0 writes the run, as rank 0 does. */
#ifndef VT_SHARES_H
#define VT_SHARES_H

#include <stddef.h>

#include "vt_train.h"

/* the fewest examples a share takes: below, the per-operation split (common/vt_par.h) */
#define VT_SHARE_MIN 4

/* How many shares a training of rcp with options o takes on `threads` threads: `threads` when the
 * run is one process (o->comm NULL or of one rank: under mpirun each rank keeps the per-operation
 * split of its own threads), threads > 1, the batch splits into `threads` equal shares of at least
 * VT_SHARE_MIN examples, rounding is exact (a judged log needs one process), the GEMMs' arithmetic is
 * FP64 (gemm_arith: a tensor-core sum is not split), the backend is the
 * CPU, no test hooks are set and the N models of a share (each with the whole state: vt_model_need)
 * fit the memory budget together (vt_model_memory_budget); otherwise 1, with the reason in why[0..cap) (empty when threads
 * <= 1 or in a data-parallel run): the step's operations then split their loops over the threads
 * (vt_par_for), the same bits either way. */
int vt_train_shares(const vt_recipe *rcp, const vt_train_opts *o, int threads, char *why, size_t cap);

/* vt_train_run as n shares (n from vt_train_shares, 1 <= n <= VT_DIST_THREADS_MAX; o->comm NULL):
 * n - 1 threads started beside the caller, which runs share 0; each share's loops run on its own
 * thread (vt_par_own_thread). res is share 0's (ranks = n). Every error is every share's (agreed, as
 * the ranks' are), returned once, as one process says it (without "rank R of N: "); a share that fails alone stops the others' collectives
 * (vt_dist_threads_stop) and its error, naming it, is returned. */
vt_err vt_train_run_shares(const vt_recipe *rcp, const vt_train_opts *o, int n, vt_train_result *res) VT_WARN_UNUSED;

#endif
