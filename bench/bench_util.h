/* bench_util.h - what the benchmarks share: the clock of per-step figures, BLAS threads, medians,
 * and the exit-on-error wrapper. Header-only (each benchmark is one executable). */
#ifndef VT_BENCH_UTIL_H
#define VT_BENCH_UTIL_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/vt_cli.h"
#include "common/vt_error.h"

#define TRY(expr)                                                                       \
    do {                                                                                \
        if ((expr) != VT_OK) {                                                          \
            fprintf(stderr, "%s: %s failed: %s\n", BENCH_NAME, #expr, vt_errmsg());     \
            exit(2);                                                                    \
        }                                                                               \
    } while (0)

/* The clock of the per-step figures. Everything timed in-process runs on this one thread (BLAS
 * single-threaded), so by default it is the CPU time of the thread (user + system): unlike the
 * wall clock it does not grow while other processes hold the CPU (the machines this runs on are
 * shared). --wall switches to the monotonic wall clock. */
static int g_cpu_clock = 1;
static inline double clk(void)
{
    if (g_cpu_clock) {
        struct timespec ts;
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    return vt_now();
}

static inline void blas_threads(int n)
{
    void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
    if (set) set(n);
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

#endif
