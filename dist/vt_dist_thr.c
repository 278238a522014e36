/* vt_dist_thr.c - the in-process communicator's collectives (vt_dist_thr.h): n threads, each one
 * rank, publish their buffers' addresses in the group, meet at a barrier, copy (or add integers)
 * from one another's buffers and meet again before any buffer may change. The bits are copied
 * unchanged; an integer sum or minimum is order-free, as MPI's. */
#include "vt_dist_thr.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VTI_THR_MSG 480
#define VTI_THR_CHUNK 2048 /* int64 reduced per round of an allreduce (on the stack) */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n, arrived, refs;
    atomic_ulong gen;   /* barriers passed (written under mu; read without it only to spin) */
    int stopped;        /* 1: every collective fails (vti_thr_stop) */
    char why[VTI_THR_MSG];
    const void **src;   /* per rank: the buffer it published for the current collective */
    const size_t **cnt; /* per rank: its counts (alltoallv) */
    int *codes;         /* per rank: its outcome (agree) */
    char (*msgs)[VTI_THR_MSG];
} vti_grp;

struct vti_thr {
    vti_grp *g;
    int rank;
};

static void grp_free(vti_grp *g)
{
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g->src);
    free(g->cnt);
    free(g->codes);
    free(g->msgs);
    free(g);
}

vt_err vti_thr_group(int n, vti_thr **ends)
{
    VT_RETURN_ERROR_IF(n < 1 || !ends, VT_ERR_ARG, "vt_dist_threads_open: bad arguments");
    vti_grp *g = calloc(1, sizeof *g);
    VT_RETURN_ERROR_IF(!g, VT_ERR_NOMEM, "vt_dist_threads_open: out of memory");
    if (pthread_mutex_init(&g->mu, NULL) != 0) {
        free(g);
        VT_RETURN_ERROR(VT_ERR_INTERNAL, "vt_dist_threads_open: cannot create a mutex");
    }
    if (pthread_cond_init(&g->cv, NULL) != 0) {
        pthread_mutex_destroy(&g->mu);
        free(g);
        VT_RETURN_ERROR(VT_ERR_INTERNAL, "vt_dist_threads_open: cannot create a condition variable");
    }
    g->n = n;
    atomic_init(&g->gen, 0);
    g->src = calloc((size_t)n, sizeof *g->src);
    g->cnt = calloc((size_t)n, sizeof *g->cnt);
    g->codes = calloc((size_t)n, sizeof *g->codes);
    g->msgs = calloc((size_t)n, sizeof *g->msgs);
    int i = 0;
    for (; g->src && g->cnt && g->codes && g->msgs && i < n; i++) {
        ends[i] = malloc(sizeof **ends);
        if (!ends[i]) break;
        ends[i]->g = g, ends[i]->rank = i;
    }
    if (i < n) {
        while (i-- > 0) free(ends[i]);
        grp_free(g);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "vt_dist_threads_open: out of memory");
    }
    g->refs = n;
    return VT_OK;
}

static void thr_close(void *impl)
{
    vti_thr *t = impl;
    vti_grp *g = t->g;
    pthread_mutex_lock(&g->mu);
    int last = --g->refs == 0;
    pthread_mutex_unlock(&g->mu);
    free(t);
    if (last) grp_free(g);
}

static vt_err stopped_err(const vti_thr *t)
{
    return vt_set_error(VT_ERR_INTERNAL, "rank %d of %d: the collective was abandoned: %s", t->rank, t->g->n,
                        t->g->why);
}

/* every end meets here; VT_ERR_INTERNAL once the group is stopped (g->mu held on entry and exit).
 * A step meets a few hundred times, mostly briefly: an end that waits first watches the generation
 * for a while (VTI_THR_SPIN polls, then VTI_THR_YIELD yields of its CPU to a partner that may be
 * waiting for one) before it sleeps on the condition, since waking a sleeping thread costs more
 * than most waits. The mutex, taken again either way, orders the memory. */
#define VTI_THR_SPIN 20000
#define VTI_THR_YIELD 16
static vt_err meet_locked(vti_thr *t)
{
    vti_grp *g = t->g;
    if (g->stopped) return stopped_err(t);
    const unsigned long my = atomic_load_explicit(&g->gen, memory_order_relaxed);
    if (++g->arrived == g->n) {
        g->arrived = 0;
        atomic_store_explicit(&g->gen, my + 1, memory_order_release);
        pthread_cond_broadcast(&g->cv);
        return VT_OK;
    }
    pthread_mutex_unlock(&g->mu);
    for (int i = 0; i < VTI_THR_SPIN + VTI_THR_YIELD; i++) {
        if (atomic_load_explicit(&g->gen, memory_order_acquire) != my) break;
        if (i >= VTI_THR_SPIN) sched_yield();
    }
    pthread_mutex_lock(&g->mu);
    while (atomic_load_explicit(&g->gen, memory_order_relaxed) == my && !g->stopped) pthread_cond_wait(&g->cv, &g->mu);
    return atomic_load_explicit(&g->gen, memory_order_relaxed) == my ? stopped_err(t) : VT_OK;
}

vt_err vti_thr_barrier(vti_thr *t)
{
    pthread_mutex_lock(&t->g->mu);
    vt_err e = meet_locked(t);
    pthread_mutex_unlock(&t->g->mu);
    return e;
}

void vti_thr_stop(vti_thr *t, const char *why)
{
    vti_grp *g = t->g;
    pthread_mutex_lock(&g->mu);
    if (!g->stopped) {
        g->stopped = 1;
        snprintf(g->why, sizeof g->why, "thread share %d stopped: %s", t->rank, why ? why : "(no reason)");
    }
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* this end's buffer (and counts) published, then the barrier */
static vt_err publish(vti_thr *t, const void *buf, const size_t *cnt)
{
    vti_grp *g = t->g;
    pthread_mutex_lock(&g->mu);
    g->src[t->rank] = buf;
    g->cnt[t->rank] = cnt;
    vt_err e = meet_locked(t);
    pthread_mutex_unlock(&g->mu);
    return e;
}

static vt_err thr_allreduce_i64(void *impl, int64_t *data, size_t n, int min)
{
    vti_thr *t = impl;
    vti_grp *g = t->g;
    VT_FORWARD_IF_ERROR(publish(t, data, NULL));
    /* chunk by chunk: every end reads chunk c of every buffer, meets, writes its own chunk c (no end
     * reads chunk c again; chunk c + 1 is written only after the next meeting) */
    uint64_t acc[VTI_THR_CHUNK];
    for (size_t i = 0; i < n; i += VTI_THR_CHUNK) {
        size_t m = n - i < VTI_THR_CHUNK ? n - i : VTI_THR_CHUNK;
        for (size_t j = 0; j < m; j++) {
            const int64_t *s0 = g->src[0];
            int64_t v = s0[i + j];
            uint64_t sum = (uint64_t)v; /* wraps as two's complement: order-free */
            for (int r = 1; r < g->n; r++) {
                int64_t w = ((const int64_t *)g->src[r])[i + j];
                if (min) v = w < v ? w : v;
                else sum += (uint64_t)w;
            }
            acc[j] = min ? (uint64_t)v : sum;
        }
        VT_FORWARD_IF_ERROR(vti_thr_barrier(t));
        for (size_t j = 0; j < m; j++) data[i + j] = (int64_t)acc[j];
    }
    return VT_OK;
}

static vt_err thr_allgatherv(void *impl, const void *mine, const size_t *bytes, void *all)
{
    vti_thr *t = impl;
    vti_grp *g = t->g;
    VT_FORWARD_IF_ERROR(publish(t, mine, NULL));
    size_t off = 0;
    for (int r = 0; r < g->n; r++) {
        if (bytes[r]) memcpy((char *)all + off, g->src[r], bytes[r]);
        off += bytes[r];
    }
    return vti_thr_barrier(t); /* no end's block changes before every end has copied it */
}

static vt_err thr_alltoallv(void *impl, const void *send, const size_t *sbytes, void *recv, const size_t *rbytes)
{
    vti_thr *t = impl;
    vti_grp *g = t->g;
    VT_FORWARD_IF_ERROR(publish(t, send, sbytes));
    vt_err e = VT_OK;
    size_t roff = 0;
    for (int r = 0; r < g->n; r++) {
        const size_t *sc = g->cnt[r];
        size_t soff = 0;
        for (int s = 0; s < t->rank; s++) soff += sc[s];
        if (!e && sc[t->rank] != rbytes[r])
            e = vt_set_error(VT_ERR_ARG, "rank %d of %d: alltoallv: expects %zu bytes from rank %d, which sends %zu",
                             t->rank, g->n, rbytes[r], r, sc[t->rank]);
        if (!e && rbytes[r]) memcpy((char *)recv + roff, (const char *)g->src[r] + soff, rbytes[r]);
        roff += rbytes[r];
    }
    vt_err b = vti_thr_barrier(t);
    return e ? e : b;
}

static vt_err thr_bcast(void *impl, void *buf, size_t len, int root)
{
    vti_thr *t = impl;
    VT_FORWARD_IF_ERROR(publish(t, buf, NULL));
    if (t->rank != root && len) memcpy(buf, t->g->src[root], len);
    return vti_thr_barrier(t);
}

vt_err vti_thr_agree(vti_thr *t, vt_err mine, int *failed_rank)
{
    vti_grp *g = t->g;
    pthread_mutex_lock(&g->mu);
    g->codes[t->rank] = (int)mine;
    snprintf(g->msgs[t->rank], VTI_THR_MSG, "%s", mine ? vt_errmsg() : "");
    vt_err e = meet_locked(t);
    pthread_mutex_unlock(&g->mu);
    VT_FORWARD_IF_ERROR(e);
    int R = -1, others = 0;
    for (int r = 0; r < g->n; r++) {
        if (g->codes[r] == VT_OK) continue;
        if (R < 0) R = r;
        else others++;
    }
    char msg[VTI_THR_MSG];
    vt_err code = VT_OK;
    if (R >= 0) {
        snprintf(msg, sizeof msg, "%s", g->msgs[R]);
        code = g->codes[R] > 0 && g->codes[R] < VT_ERR_COUNT_ ? (vt_err)g->codes[R] : VT_ERR_INTERNAL;
    }
    VT_FORWARD_IF_ERROR(vti_thr_barrier(t)); /* no end's outcome changes before every end has read them */
    if (failed_rank) *failed_rank = R;
    if (R < 0) return VT_OK;
    if (others)
        return vt_set_error(code, "rank %d of %d: %s (and %d other rank%s)", R, g->n, msg, others,
                            others == 1 ? "" : "s");
    return vt_set_error(code, "rank %d of %d: %s", R, g->n, msg);
}

void vti_thr_engine(vti_thr *t, vt_dist_engine *e)
{
    *e = (vt_dist_engine){.name = "threads", .impl = t, .allreduce_i64 = thr_allreduce_i64,
                          .allgatherv = thr_allgatherv, .alltoallv = thr_alltoallv, .bcast = thr_bcast,
                          .close = thr_close};
}
