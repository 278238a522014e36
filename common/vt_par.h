/* vt_par.h - loops split over threads, for work whose result does not depend on the split: each
 * iteration writes only its own outputs (an element's rounding, an elementwise chain), so the bits
 * are the same for every thread count (docs/architecture.md "Threads").
 *
 * One pool per process, of vt_par_threads() - 1 workers beside the caller, started at the first
 * parallel loop. vt_par_for splits [0, n) into at most vt_par_threads() contiguous parts of at least
 * min_chunk iterations and returns once every part is done. It runs the loop on the calling thread
 * alone when the pool has one thread, when n is small, when it is called from inside a parallel
 * part, or when another thread is using the pool at that moment (an auditor's parallel segment
 * replays): never a deadlock, never more threads than asked for. */
#ifndef VT_PAR_H
#define VT_PAR_H

#include <stddef.h>

/* The number of threads loops may use (>= 1). Default: VT_THREADS from the environment, else the
 * online CPUs divided among the ranks mpirun started on this node (OMPI_COMM_WORLD_LOCAL_SIZE). */
int vt_par_threads(void);
/* 1 when the count was asked for (--threads N, vt_par_set_threads, or VT_THREADS), 0 when it is the
 * default (the CPUs): the trainer says how it uses threads it was asked for. */
int vt_par_threads_asked(void);
/* Sets it (1 .. VT_PAR_MAX; clamped), before or between loops (not from inside one). */
void vt_par_set_threads(int n);

/* As the programs start (their `--threads N`, parsed by cli/vt_cli_opts.h): the pool set to n threads
 * (n = 0: left as it is - VT_THREADS, else 1 per rank) and a multithreaded BLAS (OpenBLAS, found at
 * run time) set to one thread, the GEMMs being split by rows over the pool (kernels/vt_gemm.c). In
 * exact rounding the bits do not depend on n (each element is RN32 of its exact value); a judged log
 * (rounding=log) records the elements near a boundary of its own FP64 values, which a BLAS's thread
 * count may change. */
void vt_par_configure(int n);

/* This thread runs its parallel loops on itself alone from now on (on = 1; 0: as before): a thread
 * that is one of several in-process shares of the batch (run/vt_shares.h), which are the threads
 * already. */
void vt_par_own_thread(int on);

/* fn(ctx, lo, hi, part) for contiguous parts [lo, hi) covering [0, n); part in 0 .. parts-1. */
typedef void (*vt_par_fn)(void *ctx, size_t lo, size_t hi, int part);
/* Runs the parts (concurrently when it can, see above); returns the number of parts used (>= 1
 * when n > 0, 0 when n = 0), so a caller that keeps per-part results can merge them. */
int vt_par_for(size_t n, size_t min_chunk, vt_par_fn fn, void *ctx);
/* fn(args, lo, hi) over contiguous parts [lo, hi) of [0, n) of at least grain iterations: vt_par_for
 * for loops that keep no per-part result (gathers, elementwise passes). */
typedef void (*vt_par_range_fn)(const void *args, size_t lo, size_t hi);
void vt_par_range(size_t n, size_t grain, vt_par_range_fn fn, const void *args);
/* The most parts vt_par_for may use (vt_par_threads()): the size of a caller's per-part arrays. */
#define VT_PAR_MAX 64

#endif
