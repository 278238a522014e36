/* vt_shares.c - --threads N as N in-process shares of the batch (vt_shares.h). */
#include "vt_shares.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../arch/vt_arch.h"
#include "../common/vt_mem.h"
#include "../common/vt_par.h"
#include "../dist/vt_dist.h"
#include "../ops/vt_ops.h"
#include "../rounding/vt_round_dist.h"

/* 0 (why said) when `threads` models of a share (each with the whole state) pass the memory budget
 * together; 1 when they fit, or when the program cannot be built here (vt_train_run says why) */
static int fits(const vt_recipe *rcp, int threads, char *why, size_t cap)
{
    vt_recipe *share = malloc(sizeof *share); /* a large recipe (an imported graph's canonical form) */
    if (!share) return 1;
    *share = *rcp;
    share->batch = rcp->batch / (uint32_t)threads;
    vt_program p;
    vt_program_init(&p);
    int ok = 1;
    if (vt_program_build(share, &p) == VT_OK) {
        vt_model_mem mem;
        vt_model_need(&p, share->batch, rcp->subset, &mem);
        const double all = mem.total * threads, budget = (double)vt_model_memory_budget();
        if (all + vt_model_memory_held() > budget) { /* --max-memory: beside what the process holds */
            char a[32], b[32];
            vt_fmt_bytes(all, a, sizeof a);
            vt_fmt_bytes(budget, b, sizeof b);
            snprintf(why, cap, "%d models of a share (%s together) pass the memory budget of %s", threads, a, b);
            ok = 0;
        }
    }
    vt_program_free(&p);
    free(share);
    return ok;
}

int vt_train_shares(const vt_recipe *rcp, const vt_train_opts *o, int threads, char *why, size_t cap)
{
    if (cap) why[0] = 0;
    if (threads <= 1 || (o->comm && vt_dist_size(o->comm) > 1)) return 1;
    if (threads > VT_DIST_THREADS_MAX) threads = VT_DIST_THREADS_MAX;
    const uint32_t b = rcp->batch / (uint32_t)threads;
    if (rcp->batch % (uint32_t)threads != 0 || b < VT_SHARE_MIN)
        snprintf(why, cap, "the batch of %u examples does not split into %d equal shares of at least %d", rcp->batch,
                 threads, VT_SHARE_MIN);
    else if (rcp->bound.rounding != VT_ROUNDING_EXACT)
        snprintf(why, cap, "rounding=log's judged log is made by one share");
    else if (rcp->gemm_arith)
        snprintf(why, cap, "gemm_arith=%s's tensor-core sums are not split across shares",
                 vt_gemm_arith_names[rcp->gemm_arith]);
    else if (o->backend && strcmp(o->backend, "cpu") != 0)
        snprintf(why, cap, "--backend %s runs the step on its device", o->backend);
    else if (o->hooks)
        snprintf(why, cap, "the test hooks act on one share");
    else if (!fits(rcp, threads, why, cap))
        return 1;
    else
        return threads;
    return 1;
}

typedef struct {
    const vt_recipe *rcp;
    vt_train_opts o;
    vt_train_result res;
    vt_err e;
    char msg[512];
} share;

static void run_share(share *s)
{
    vt_par_own_thread(1); /* the shares are the threads: no share's loop takes the pool */
    s->e = vt_train_run(s->rcp, &s->o, &s->res);
    vt_par_own_thread(0);
    vt_round_dist_release(); /* this thread's buffers of the sums across the shares (it ends, or is done) */
    if (!s->e) return;
    snprintf(s->msg, sizeof s->msg, "%s", vt_errmsg());
    if (!s->res.err_common) vt_dist_threads_stop(s->o.comm, s->msg); /* alone: nobody waits for it */
}

static void *share_main(void *arg)
{
    run_share(arg);
    return NULL;
}

/* An error every share agreed on, as one process says it: the share that met it first ("rank R of
 * N: " before, " (and K other ranks)" after) is nobody's business but the run's threads' (msg is
 * changed in place) */
static const char *one_process(char *msg, int n)
{
    int r = -1, size = -1, len = 0;
    if (sscanf(msg, "rank %d of %d: %n", &r, &size, &len) == 2 && size == n && len > 0) msg += len;
    char *tail = NULL;
    for (char *q = strstr(msg, " (and "); q; q = strstr(q + 1, " (and ")) tail = q; /* the last */
    int k = 0, end = 0;
    if (tail && sscanf(tail, " (and %d other rank%*[s])%n", &k, &end) >= 1 && end > 0 && tail[end] == 0) *tail = 0;
    else if (tail && sscanf(tail, " (and %d other rank)%n", &k, &end) >= 1 && end > 0 && tail[end] == 0) *tail = 0;
    return msg;
}

vt_err vt_train_run_shares(const vt_recipe *rcp, const vt_train_opts *o, int n, vt_train_result *res)
{
    memset(res, 0, sizeof *res);
    VT_RETURN_ERROR_IF(n < 1 || n > VT_DIST_THREADS_MAX || (o->comm && vt_dist_size(o->comm) > 1), VT_ERR_ARG,
                       "vt_train_run_shares: %d shares (1 .. %d, in one process)", n, VT_DIST_THREADS_MAX);
    if (n == 1) return vt_train_run(rcp, o, res);
    vt_comm *comms[VT_DIST_THREADS_MAX];
    share *sh = calloc((size_t)n, sizeof *sh);
    VT_RETURN_ERROR_IF(!sh, VT_ERR_NOMEM, "--threads %d: out of memory", n);
    vt_err e = vt_dist_threads_open(n, comms);
    if (e) {
        free(sh);
        return e;
    }
    for (int i = 0; i < n; i++) {
        sh[i].rcp = rcp, sh[i].o = *o;
        sh[i].o.comm = comms[i];
        sh[i].o.shard_state = 0; /* one process: the whole state is every share's (as for one rank) */
        if (i) sh[i].o.quiet = 1;
    }
    pthread_t th[VT_DIST_THREADS_MAX];
    int started = 1;
    pthread_attr_t attr;
    int attr_ok = pthread_attr_init(&attr) == 0;
    if (attr_ok) (void)pthread_attr_setstacksize(&attr, (size_t)16 << 20); /* the main thread's stack, or more */
    for (; started < n; started++)
        if (pthread_create(&th[started], attr_ok ? &attr : NULL, share_main, &sh[started]) != 0) break;
    if (attr_ok) pthread_attr_destroy(&attr);
    if (started < n) { /* the shares started cannot meet the missing ones: stopped, then joined */
        vt_dist_threads_stop(comms[0], "a thread could not be started");
        for (int i = 1; i < started; i++) pthread_join(th[i], NULL);
        for (int i = 0; i < n; i++) (void)vt_dist_finalize(&comms[i]);
        free(sh);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "--threads %d: cannot start thread %d of the batch's shares; try fewer threads",
                        n, started);
    }
    run_share(&sh[0]);
    for (int i = 1; i < n; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < n; i++) (void)vt_dist_finalize(&comms[i]);
    /* the result: share 0's, unless a share failed alone (its own error, named) */
    int alone = -1;
    for (int i = 0; i < n && alone < 0; i++)
        if (sh[i].e && !sh[i].res.err_common) alone = i;
    *res = sh[0].res;
    if (alone >= 0 && strncmp(sh[alone].msg, "rank ", 5) != 0)
        e = vt_set_error(sh[alone].e, "thread share %d of %d: %s", alone, n, sh[alone].msg);
    else if (alone >= 0)
        e = vt_set_error(sh[alone].e, "%s", sh[alone].msg);
    else if (sh[0].e)
        e = vt_set_error(sh[0].e, "%s", one_process(sh[0].msg, n));
    res->err_common = 0;
    free(sh);
    return e;
}
