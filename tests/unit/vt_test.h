/* vt_test.h - a minimal test harness: CHECK macros that count failures, a seeded
 * generator (so every failure prints its seed and can be reproduced) and a
 * closing line "N passed, N failed". Exit status: 0 all passed, 1 any failed, 77 skipped. */
#ifndef VT_TEST_H
#define VT_TEST_H

#include <stdint.h>
#include <stdio.h>

extern long vt_test_passed, vt_test_failed;

#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        if (cond) {                                                              \
            vt_test_passed++;                                                    \
        } else {                                                                 \
            vt_test_failed++;                                                    \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
        }                                                                        \
    } while (0)

/* Check that an expression returning vt_err succeeded (prints vt_errmsg()). */
#define CHECK_OK(expr)                                                                       \
    do {                                                                                     \
        int vt_rc_ = (int)(expr);                                                            \
        CHECK(vt_rc_ == 0, "%s returned %d: %s", #expr, vt_rc_, vt_errmsg());              \
    } while (0)

/* Print the closing line and return the exit status. */
int vt_test_finish(const char *name);

/* splitmix64: seeded, reproducible. */
typedef struct { uint64_t s; } vt_rng;
uint64_t vt_rng_next(vt_rng *r);
double vt_rng_uniform(vt_rng *r);  /* [0,1) */
double vt_rng_normal(vt_rng *r);   /* polar method with vt_log: the same on every machine */
/* The data-parallel tests' command line `NAME [--ranks N]` (N: the ranks mpirun started, 0 when not
 * given) into *ranks: -1 to go on, else the exit status to return at once (64 a usage error, 77 N > 1 in
 * a build without MPI: skipped). */
int vt_test_ranks_arg(int argc, char **argv, const char *name, int *ranks);

/* Seed from env VT_TEST_SEED when set, else the given default; prints it. */
uint64_t vt_test_seed(uint64_t dflt);
/* The hang guards' scale: env VT_TEST_TIMEOUT_SCALE (a positive number, default 1; tests/e2e/lib.sh,
 * tests/tests.cmake). A test's own bounds on a wait that should end (a deadline nobody may reach,
 * a ceiling on a prompt return) are multiplied by it; lower bounds are not. */
double vt_test_timeout_scale(void);

#endif
