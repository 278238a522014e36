/* vt_par.c - the thread pool behind vt_par_for (vt_par.h). */
#include "vt_par.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    vt_par_fn fn;
    void *ctx;
    size_t n;
    int parts;
    int next;    /* the next part to hand out */
    int pending; /* parts not finished */
} job;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_work = PTHREAD_COND_INITIALIZER, g_done = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t g_use = PTHREAD_MUTEX_INITIALIZER; /* held by the caller of a parallel loop */
static job g_job;
static unsigned long g_gen;   /* a new job's generation */
static int g_threads = 0;     /* 0: not read from the environment yet */
static int g_asked = 0;       /* the count was asked for (VT_THREADS, vt_par_set_threads) */
static int g_started = 0;     /* workers running */
static _Thread_local int g_inside; /* this thread runs a part */
static _Thread_local int g_own;    /* this thread runs its loops alone (vt_par_own_thread) */

static void part_range(size_t n, int parts, int p, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)p / (size_t)parts;
    *hi = n * (size_t)(p + 1) / (size_t)parts;
}

/* takes and runs parts of the current job until none is left (g_mu held on entry and exit) */
static void run_parts(void)
{
    while (g_job.next < g_job.parts) {
        int p = g_job.next++;
        job j = g_job;
        pthread_mutex_unlock(&g_mu);
        size_t lo, hi;
        part_range(j.n, j.parts, p, &lo, &hi);
        g_inside = 1;
        j.fn(j.ctx, lo, hi, p);
        g_inside = 0;
        pthread_mutex_lock(&g_mu);
        if (--g_job.pending == 0) pthread_cond_broadcast(&g_done);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&g_mu);
    for (;;) {
        while (g_gen == seen) pthread_cond_wait(&g_work, &g_mu);
        seen = g_gen;
        run_parts();
    }
    return NULL; /* not reached: the workers live as long as the process */
}

int vt_par_threads(void)
{
    pthread_mutex_lock(&g_mu);
    if (g_threads == 0) {
        /* VT_THREADS, else the online CPUs shared among the ranks mpirun started on this node */
        const char *e = getenv("VT_THREADS"), *l = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        long cpus = sysconf(_SC_NPROCESSORS_ONLN), local = l && *l ? strtol(l, NULL, 10) : 1;
        long v = e && *e ? strtol(e, NULL, 10) : (cpus > 0 ? cpus : 1) / (local > 0 ? local : 1);
        g_threads = v < 1 ? 1 : v > VT_PAR_MAX ? VT_PAR_MAX : (int)v;
        g_asked = e && *e;
    }
    int t = g_threads;
    pthread_mutex_unlock(&g_mu);
    return t;
}

void vt_par_set_threads(int n)
{
    pthread_mutex_lock(&g_mu);
    g_threads = n < 1 ? 1 : n > VT_PAR_MAX ? VT_PAR_MAX : n;
    g_asked = 1;
    pthread_mutex_unlock(&g_mu);
}

int vt_par_threads_asked(void)
{
    (void)vt_par_threads(); /* VT_THREADS read */
    pthread_mutex_lock(&g_mu);
    int a = g_asked;
    pthread_mutex_unlock(&g_mu);
    return a;
}

int vt_par_for(size_t n, size_t min_chunk, vt_par_fn fn, void *ctx)
{
    if (n == 0) return 0;
    int t = vt_par_threads();
    size_t most = min_chunk ? n / min_chunk : n;
    int parts = most < (size_t)t ? (int)(most ? most : 1) : t;
    if (parts <= 1 || g_inside || g_own || pthread_mutex_trylock(&g_use) != 0) {
        fn(ctx, 0, n, 0);
        return 1;
    }
    pthread_mutex_lock(&g_mu);
    while (g_started < parts - 1) { /* workers are started as loops need them, and kept */
        pthread_t th;
        if (pthread_create(&th, NULL, worker, NULL) != 0) break;
        pthread_detach(th);
        g_started++;
    }
    if (g_started < parts - 1) parts = g_started + 1;
    g_job = (job){fn, ctx, n, parts, 0, parts};
    g_gen++;
    pthread_cond_broadcast(&g_work);
    run_parts(); /* the caller takes parts too */
    while (g_job.pending > 0) pthread_cond_wait(&g_done, &g_mu);
    pthread_mutex_unlock(&g_mu);
    pthread_mutex_unlock(&g_use);
    return parts;
}

void vt_par_own_thread(int on) { g_own = on != 0; }

/* A BLAS that threads its GEMM (OpenBLAS), to the same count; others have no such call. */
static void blas_threads(int n)
{
    void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
    if (set) set(n);
}

void vt_par_configure(int n)
{
    if (n) vt_par_set_threads(n);
    blas_threads(1); /* the GEMMs are split by rows over our threads, each part with a one-thread BLAS */
}

typedef struct {
    vt_par_range_fn fn;
    const void *args;
} range_job;

static void range_part(void *ctx, size_t lo, size_t hi, int part)
{
    (void)part;
    const range_job *j = ctx;
    j->fn(j->args, lo, hi);
}

void vt_par_range(size_t n, size_t grain, vt_par_range_fn fn, const void *args)
{
    range_job j = {fn, args};
    (void)vt_par_for(n, grain, range_part, &j);
}
