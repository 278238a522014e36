#include "vt_test.h"

#include <math.h>
#include <stdlib.h>

#include "common/vt_error.h"

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

double vt_rng_normal(vt_rng *r)
{
    double u1 = vt_rng_uniform(r), u2 = vt_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uint64_t vt_test_seed(uint64_t dflt)
{
    const char *s = getenv("VT_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 0) : dflt;
    printf("seed %llu (set VT_TEST_SEED to reproduce)\n", (unsigned long long)seed);
    return seed;
}
