/* test_nccl.c - the communicator's NCCL engine (backend/cuda/vt_nccl.h, docs/distributed.md "GPU ranks"):
 * every case of test_dist (the collectives, agree, distributed exact rounding of the random and the
 * adversarial sums, rounds, bounds, failures) run with the NCCL engine installed right after
 * vt_dist_init. test_dist asserts each result equal, bit for bit, to RN32 of the exact sum computed
 * in one process (and to MPFR's) and rank 0's bytes equal to every rank's, which is what the MPI
 * engine gives (test_dist_npN): so the NCCL engine's results are the MPI engine's bytes.
 * Exit 77 (skipped) where the engine cannot run: no CUDA build or GPU (vt_backend_open("cuda")
 * fails), no NCCL in the build, fewer GPUs than ranks on the machine (vt_nccl_attach:
 * VT_ERR_UNSUPPORTED). One rank without mpirun is a one-rank NCCL communicator (no MPI needed);
 * tests/cmake/nccl.cmake runs it under mpirun -np 2 too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/vt_backend_open.h"
#include "backend/cuda/vt_nccl.h"
#include "dist/vt_dist.h"

static vt_backend g_be;
static void close_backend(void) { vt_backend_close(&g_be); }

/* vt_dist_init, then the NCCL engine on this rank's GPU */
static vt_err nccl_dist_init(vt_comm **out)
{
    vt_err e = vt_dist_init(out);
    if (e) return e; /* test_dist's own checks of a failing init */
    vt_err eb = vt_backend_open("cuda", &g_be);
    char why[512];
    snprintf(why, sizeof why, "%s", eb ? vt_errmsg() : "");
    eb = vt_dist_agree(*out, eb, NULL); /* every rank skips, or none */
    if (!eb) {
        atexit(close_backend);
        eb = vt_nccl_attach(&g_be, *out);
        snprintf(why, sizeof why, "%s", eb ? vt_errmsg() : "");
    }
    if (eb == VT_ERR_UNSUPPORTED) {
        if (vt_dist_rank(*out) == 0) printf("test_nccl: SKIP: %s\n", why);
        (void)vt_dist_finalize(out);
        exit(77);
    }
    if (eb) {
        fprintf(stderr, "test_nccl: the NCCL engine: %s\n", why);
        (void)vt_dist_finalize(out);
        exit(1);
    }
    if (strcmp(vt_dist_engine_name(*out), "nccl") != 0) {
        fprintf(stderr, "test_nccl: the engine is \"%s\", not nccl\n", vt_dist_engine_name(*out));
        exit(1);
    }
    if (vt_dist_rank(*out) == 0) printf("test_nccl: the collectives over NCCL (%s)\n", g_be.desc);
    return VT_OK;
}

#define vt_dist_init nccl_dist_init
#include "test_dist.c"
