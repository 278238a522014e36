/* vt_dist.h - the communicator of data-parallel runs (library vt_dist, docs/distributed.md): a
 * handle with this process's rank and the number of ranks, and the few collectives the layers above
 * need - an integer sum of int64 arrays (order-free), an allgather of FP64 arrays in rank order, an
 * allgather of byte blocks of any sizes and a personalised exchange (alltoallv) of byte blocks, a
 * broadcast of bytes, a barrier and "agree" (every rank learns whether any rank failed, and which).
 *
 * Open MPI is the engine (optional at build time: VT_MPI). vt_dist_init calls MPI_Init only when
 * the process was started by a launcher (mpirun / mpiexec / srun: OMPI_COMM_WORLD_SIZE, PMIX_RANK,
 * PMI_RANK or PMI_SIZE in the environment); otherwise, and in a build without MPI, the communicator
 * is one rank of one and no MPI function is ever called: every collective is then a copy or
 * nothing, through the same entry points. MPI errors are returned (MPI_ERRORS_RETURN on the
 * library's own duplicate of MPI_COMM_WORLD), each turned into a vt_err whose message names the
 * rank and the MPI call. Nothing here exits or aborts.
 *
 * Every collective must be called by every rank, in the same order, with the same counts (as MPI
 * requires); they are called from one thread (MPI_THREAD_FUNNELED). */
#ifndef VT_DIST_H
#define VT_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

typedef struct vt_comm vt_comm;

/* 1 when this build has MPI (VT_MPI found Open MPI at configure time), else 0. */
int vt_dist_built_with_mpi(void);

/* Opens the communicator. Launched by mpirun (see above): MPI_Init_thread (once per process, as
 * MPI allows; an MPI already initialised by the caller is used and left to it), a duplicate of
 * MPI_COMM_WORLD with MPI_ERRORS_RETURN. Not launched: one rank, no MPI. A build without MPI that
 * is launched as one of several ranks answers VT_ERR_UNSUPPORTED saying so (one rank of one is
 * accepted). */
vt_err vt_dist_init(vt_comm **out) VT_WARN_UNUSED;

/* Closes the communicator (NULL: nothing; its engine closed first) and, when vt_dist_init called MPI_Init, MPI_Finalize:
 * MPI cannot be initialised again in this process afterwards. Collective. *c is set to NULL. */
vt_err vt_dist_finalize(vt_comm **c);

int vt_dist_rank(const vt_comm *c);
int vt_dist_size(const vt_comm *c);
/* In-process shares (docs/architecture.md "Threads"): n communicators (comms[0..n), 1 <= n <=
 * VT_DIST_THREADS_MAX) of this one process, comms[i] rank i of n, for n threads that each call the
 * collectives through their own communicator, as MPI's ranks do (every collective by every thread,
 * in the same order). Their engine is "threads": the data collectives copy the bits (or add the
 * integers) from one another's buffers in shared memory; vt_dist_agree and vt_dist_barrier meet at
 * the group's barrier (agree naming "rank R of N", share R). No MPI. Each is closed by
 * vt_dist_finalize (the group freed with the last); vt_dist_set_engine refuses them. */
#define VT_DIST_THREADS_MAX 64
vt_err vt_dist_threads_open(int n, vt_comm **comms) VT_WARN_UNUSED;
/* c's group stopped (a thread that stops alone, why its reason): every collective waiting on any of
 * its communicators, and every later one, returns VT_ERR_INTERNAL naming the reason, so no thread is
 * left waiting. Nothing for another communicator. */
void vt_dist_threads_stop(vt_comm *c, const char *why);

/* 1 when the communicator runs over MPI (launched by mpirun, even as one rank), 0 when it is the
 * single process without MPI. */
int vt_dist_is_mpi(const vt_comm *c);

/* For benchmarks: the MPI collectives called through c so far, of these the exchanges
 * (vt_dist_alltoallv), and the wall and this thread's CPU seconds spent in them (waiting for the
 * other ranks included: Open MPI polls); all 0 without MPI. */
typedef struct {
    uint64_t collectives, exchanges;
    double seconds, cpu_seconds;
} vt_dist_clock_t;
void vt_dist_clock(const vt_comm *c, vt_dist_clock_t *out);

/* Another engine for the data collectives (docs/distributed.md "GPU ranks"): the CUDA backend's
 * NCCL engine (backend/cuda/vt_nccl.c) installs one with vt_dist_set_engine; dist/ knows only this table.
 * Once installed, vt_dist_allreduce_i64 and vt_dist_allreduce_min_i64 (integer sum and minimum),
 * vt_dist_allgather_f64 and vt_dist_allgatherv (bytes, copied unchanged), vt_dist_alltoallv and
 * vt_dist_bcast go through it, after this file's own argument and size checks; vt_dist_agree and
 * vt_dist_barrier stay on MPI. The buffers are the caller's host arrays (the engine stages them).
 * Every entry is collective, as the vt_dist_ function it serves, and returns a vt_err whose
 * message names the rank and the engine's call. The FP64 values of vt_dist_allgather_f64 reach it
 * as bytes: an engine never adds floating-point values. */
typedef struct {
    char name[16]; /* "nccl" */
    void *impl;
    /* data[0..n) := the integer sum (min = 0) or minimum (min = 1) over the ranks, in place */
    vt_err (*allreduce_i64)(void *impl, int64_t *data, size_t n, int min);
    /* as vt_dist_allgatherv (bytes[] checked here: each block and the total within INT_MAX) */
    vt_err (*allgatherv)(void *impl, const void *mine, const size_t *bytes, void *all);
    /* as vt_dist_alltoallv (counts checked here) */
    vt_err (*alltoallv)(void *impl, const void *send, const size_t *sbytes, void *recv, const size_t *rbytes);
    vt_err (*bcast)(void *impl, void *buf, size_t len, int root);
    /* releases impl (vt_dist_finalize, or another vt_dist_set_engine) */
    void (*close)(void *impl);
} vt_dist_engine;

/* Installs *e (copied; NULL: back to MPI), closing the engine installed before. Local, not
 * collective: every rank must install the same engine before its next collective. */
vt_err vt_dist_set_engine(vt_comm *c, const vt_dist_engine *e) VT_WARN_UNUSED;
/* The engine of the data collectives: the installed engine's name, else "mpi" (launched by mpirun)
 * or "local" (one rank, no MPI). */
const char *vt_dist_engine_name(const vt_comm *c);

/* data[0..n) := the sum over the ranks of their data[0..n), in place. Integer addition: the result
 * does not depend on the order MPI adds in (the caller keeps the sums within int64). */
vt_err vt_dist_allreduce_i64(vt_comm *c, int64_t *data, size_t n) VT_WARN_UNUSED;

/* data[0..n) := the minimum over the ranks of their data[0..n), in place (order-free). */
vt_err vt_dist_allreduce_min_i64(vt_comm *c, int64_t *data, size_t n) VT_WARN_UNUSED;

/* all[r*n .. r*n+n) := rank r's mine[0..n), for every rank r (all holds size*n values; mine and
 * all must not overlap). Every rank passes the same n. The bits are copied unchanged. */
vt_err vt_dist_allgather_f64(vt_comm *c, const double *mine, size_t n, double *all) VT_WARN_UNUSED;

/* The bytes of every rank's block, in rank order: rank r's mine[0 .. bytes[r]) lands at
 * all[off_r .. off_r + bytes[r]), off_r = bytes[0] + ... + bytes[r-1] (every rank passes the same
 * bytes[], size entries; this rank's mine holds bytes[rank]). Each block and the total at most
 * INT_MAX bytes (VT_ERR_LIMIT). mine and all must not overlap. The bits are copied unchanged. */
vt_err vt_dist_allgatherv(vt_comm *c, const void *mine, const size_t *bytes, void *all) VT_WARN_UNUSED;

/* Every rank's block of its own length, gathered to every rank in rank order (the ranks need not
 * know one another's lengths): *all (malloc'd, the caller frees it; NULL when every block is empty)
 * holds the blocks one after another, (*lens)[r] (malloc'd, size entries) rank r's length. Two
 * collectives whatever the lengths - an allgather of the lengths, then vt_dist_allgatherv - and each
 * allocation is agreed (vt_dist_agree) before the collective that needs it, so a rank out of memory
 * stops every rank and none is left waiting. The total at most INT_MAX bytes (VT_ERR_LIMIT, on every
 * rank alike). One rank: a copy. */
vt_err vt_dist_allgather_blocks(vt_comm *c, const void *mine, size_t len, uint8_t **all, size_t **lens)
    VT_WARN_UNUSED;

/* Personalised exchange: this rank sends send[soff_s .. soff_s + sbytes[s]) to rank s and receives
 * rank r's block for it at recv[roff_r .. roff_r + rbytes[r]) (offsets: the prefix sums of the
 * counts, in rank order; the block to itself is copied). rbytes[r] must equal what rank r passes as
 * its sbytes[this rank]. Each count and each total at most INT_MAX bytes (VT_ERR_LIMIT). */
vt_err vt_dist_alltoallv(vt_comm *c, const void *send, const size_t *sbytes, void *recv, const size_t *rbytes)
    VT_WARN_UNUSED;

/* buf[0..len) of rank root copied to every rank. */
vt_err vt_dist_bcast(vt_comm *c, void *buf, size_t len, int root) VT_WARN_UNUSED;

vt_err vt_dist_barrier(vt_comm *c) VT_WARN_UNUSED;

/* Every rank passes its own outcome (VT_OK or the error it is about to return, with its message
 * set). Returns VT_OK on every rank when every rank passed VT_OK; otherwise, on every rank, the
 * error of the lowest failing rank R with the message "rank R of N: MESSAGE" (R's own message,
 * at most 480 bytes of it), plus " (and K other ranks)" when more failed; *failed_rank (NULL: not
 * wanted) is R, or -1 when none failed. An MPI failure of the agreement itself is returned as such. */
vt_err vt_dist_agree(vt_comm *c, vt_err mine, int *failed_rank) VT_WARN_UNUSED;

#endif
