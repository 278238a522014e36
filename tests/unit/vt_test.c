#include "vt_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/vt_cli.h"
#include "common/vt_error.h"
#include "dist/vt_dist.h"
#include "kernels/vt_math.h"

long vt_test_passed, vt_test_failed;

int vt_test_finish(const char *name)
{
    printf("%s: %ld passed, %ld failed\n", name, vt_test_passed, vt_test_failed);
    return vt_test_failed ? 1 : 0;
}

uint64_t vt_rng_next(vt_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double vt_rng_uniform(vt_rng *r) { return (double)(vt_rng_next(r) >> 11) * 0x1p-53; }

/* Marsaglia's polar method with the project's portable log (kernels/vt_math.h) and the
 * correctly rounded sqrt: the same test data from the same seed on every machine and libm. */
double vt_rng_normal(vt_rng *r)
{
    for (;;) {
        double u = 2.0 * vt_rng_uniform(r) - 1.0, v = 2.0 * vt_rng_uniform(r) - 1.0;
        double q = u * u + v * v;
        if (q > 0.0 && q < 1.0) return u * sqrt(-2.0 * vt_log(q) / q);
    }
}

uint64_t vt_test_seed(uint64_t dflt)
{
    const char *s = getenv("VT_TEST_SEED");
    uint64_t seed = dflt;
    if (s && vt_cli_u64("VT_TEST_SEED", s, 0, UINT64_MAX, &seed) != VT_OK) {
        fprintf(stderr, "%s\n", vt_errmsg());
        exit(64);
    }
    printf("seed %llu (set VT_TEST_SEED to reproduce)\n", (unsigned long long)seed);
    return seed;
}

double vt_test_timeout_scale(void)
{
    const char *s = getenv("VT_TEST_TIMEOUT_SCALE");
    if (!s || !*s) return 1.0;
    char *end;
    double v = strtod(s, &end);
    if (*end || !(v > 0) || !(v <= 1e4)) {
        fprintf(stderr, "VT_TEST_TIMEOUT_SCALE=%s: expected a positive number, at most 10000\n", s);
        exit(64);
    }
    return v;
}

int vt_test_ranks_arg(int argc, char **argv, const char *name, int *ranks)
{
    *ranks = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) {
            *ranks = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--ranks N]\n", name);
            return 64;
        }
    }
    if (*ranks > 1 && !vt_dist_built_with_mpi()) {
        printf("%s: SKIP: this build has no MPI (VT_MPI), %d ranks requested\n", name, *ranks);
        return 77;
    }
    return -1;
}
