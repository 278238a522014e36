/* vt_dist.c - the communicator of data-parallel runs (vt_dist.h): Open MPI when launched by mpirun
 * and built with it (VT_HAVE_MPI), else one rank with no MPI at all; every MPI error returned as a
 * vt_err naming the rank and the call. */
#include "vt_dist.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/vt_cli.h"
#include "vt_dist_thr.h"

#ifdef VT_HAVE_MPI
#include <mpi.h>
#endif

struct vt_comm {
    int rank, size;
    int is_mpi;
    uint64_t n_coll, n_a2a; /* MPI collectives called, alltoallv among them, the wall and thread CPU */
    double t_coll, c_coll;  /* seconds in them */
    vt_dist_engine eng;     /* the data collectives' engine (eng.impl NULL: MPI or the copy of one rank) */
    vti_thr *thr;           /* an in-process communicator's end (vt_dist_threads_open; its engine's impl) */
#ifdef VT_HAVE_MPI
    MPI_Comm comm; /* our duplicate of MPI_COMM_WORLD, MPI_ERRORS_RETURN */
#endif
};

int vt_dist_built_with_mpi(void)
{
#ifdef VT_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

/* The environment of a launched process: 1 when a launcher started it; *size the world size it
 * announces (0 when unknown), *rank its rank (-1 when unknown). */
static int launched(long *size, long *rank)
{
    static const char *const size_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    int any = 0;
    *size = 0;
    *rank = -1;
    for (size_t i = 0; i < sizeof size_vars / sizeof *size_vars; i++) {
        const char *v = getenv(size_vars[i]);
        if (!v) continue;
        any = 1;
        if (*size == 0) *size = strtol(v, NULL, 10);
    }
    for (size_t i = 0; i < sizeof rank_vars / sizeof *rank_vars; i++) {
        const char *v = getenv(rank_vars[i]);
        if (!v) continue;
        any = 1;
        if (*rank < 0) *rank = strtol(v, NULL, 10);
    }
    return any;
}

/* this thread's CPU seconds (MPI waits by polling: its waits count as CPU) */
static double thread_cpu(void)
{
    struct timespec ts;
    return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0 ? (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec : 0.0;
}

/* stmt (a collective's call, MPI's or the engine's), its wall time counted */
#define VTI_TIME(c, stmt)                                                                                              \
    do {                                                                                                               \
        double t0_ = vt_now(), c0_ = thread_cpu();                                                                     \
        stmt;                                                                                                          \
        (c)->n_coll++;                                                                                                 \
        (c)->t_coll += vt_now() - t0_;                                                                                 \
        (c)->c_coll += thread_cpu() - c0_;                                                                             \
    } while (0)

/* with an engine installed: the engine's call, timed, returned */
#define VTI_ENGINE(c, call)                                                                                            \
    do {                                                                                                               \
        if ((c)->eng.impl) {                                                                                           \
            vt_err e_;                                                                                                 \
            VTI_TIME(c, e_ = (c)->eng.call);                                                                           \
            return e_;                                                                                                 \
        }                                                                                                              \
    } while (0)

#ifdef VT_HAVE_MPI
static int g_we_initialised; /* vt_dist_init called MPI_Init_thread */
static int g_open;           /* open MPI communicators */

static vt_err mpi_fail(int rank, int size, int rc, const char *call)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "MPI error code %d", rc);
    return vt_set_error(VT_ERR_IO, "rank %d of %d: %s failed: %s", rank, size, call, s);
}

#define VTI_MPI(c, name, call)                                                                                         \
    do {                                                                                                               \
        int rc_;                                                                                                       \
        VTI_TIME(c, rc_ = (call));                                                                                     \
        if (rc_ != MPI_SUCCESS) return mpi_fail((c)->rank, (c)->size, rc_, name);                                     \
    } while (0)
#endif

vt_err vt_dist_init(vt_comm **out)
{
    VT_RETURN_ERROR_IF(!out, VT_ERR_ARG, "vt_dist_init: no output");
    *out = NULL;
    long lsize, lrank;
    int by_launcher = launched(&lsize, &lrank);
    vt_comm *c = calloc(1, sizeof *c);
    VT_RETURN_ERROR_IF(!c, VT_ERR_NOMEM, "vt_dist_init: out of memory");
    c->rank = 0;
    c->size = 1;
#ifdef VT_HAVE_MPI
    if (by_launcher) {
        int done = 0, fin = 0, rc;
        MPI_Finalized(&fin);
        if (fin) {
            free(c);
            VT_RETURN_ERROR(VT_ERR_INTERNAL, "vt_dist_init: MPI was finalised in this process; it cannot start again");
        }
        MPI_Initialized(&done);
        if (!done) {
            int provided = 0;
            rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
            if (rc != MPI_SUCCESS) {
                free(c);
                return mpi_fail((int)lrank, (int)lsize, rc, "MPI_Init_thread");
            }
            g_we_initialised = 1;
        }
        rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
        if (rc != MPI_SUCCESS) {
            free(c);
            return mpi_fail((int)lrank, (int)lsize, rc, "MPI_Comm_dup");
        }
        g_open++;
        c->is_mpi = 1;
        if ((rc = MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
            (rc = MPI_Comm_rank(c->comm, &c->rank)) != MPI_SUCCESS ||
            (rc = MPI_Comm_size(c->comm, &c->size)) != MPI_SUCCESS) {
            vt_err e = mpi_fail((int)lrank, (int)lsize, rc, "MPI_Comm_set_errhandler/rank/size");
            vt_comm *tmp = c;
            (void)vt_dist_finalize(&tmp);
            return e;
        }
    }
#else
    if (by_launcher && (lsize > 1 || lrank > 0)) {
        free(c);
        VT_RETURN_ERROR(VT_ERR_UNSUPPORTED,
                        "this build has no MPI (configured without Open MPI, VT_MPI): launched as rank %ld of %ld, "
                        "but it can run one rank only; rebuild with libopenmpi-dev installed",
                        lrank < 0 ? 0 : lrank, lsize > 0 ? lsize : 2);
    }
#endif
    *out = c;
    return VT_OK;
}

vt_err vt_dist_finalize(vt_comm **cp)
{
    if (!cp || !*cp) return VT_OK;
    vt_comm *c = *cp;
    *cp = NULL;
    vt_err ret = VT_OK;
    if (c->eng.impl && c->eng.close) c->eng.close(c->eng.impl);
#ifdef VT_HAVE_MPI
    if (c->is_mpi) {
        int rank = c->rank, size = c->size;
        int rc = MPI_Comm_free(&c->comm);
        if (rc != MPI_SUCCESS) ret = mpi_fail(rank, size, rc, "MPI_Comm_free");
        if (--g_open == 0 && g_we_initialised) {
            g_we_initialised = 0;
            rc = MPI_Finalize();
            if (rc != MPI_SUCCESS && !ret) ret = mpi_fail(rank, size, rc, "MPI_Finalize");
        }
    }
#endif
    free(c);
    return ret;
}

vt_err vt_dist_threads_open(int n, vt_comm **comms)
{
    VT_RETURN_ERROR_IF(n < 1 || n > VT_DIST_THREADS_MAX || !comms, VT_ERR_ARG,
                       "vt_dist_threads_open: %d shares (1 .. %d)", n, VT_DIST_THREADS_MAX);
    vti_thr *ends[VT_DIST_THREADS_MAX];
    VT_FORWARD_IF_ERROR(vti_thr_group(n, ends));
    int i = 0;
    for (; i < n; i++) {
        comms[i] = calloc(1, sizeof *comms[i]);
        if (!comms[i]) break;
        comms[i]->rank = i, comms[i]->size = n, comms[i]->thr = ends[i];
        vti_thr_engine(ends[i], &comms[i]->eng);
    }
    if (i < n) {
        for (int k = 0; k < n; k++) {
            if (k < i) {
                vt_comm *tmp = comms[k];
                (void)vt_dist_finalize(&tmp); /* releases its end */
            } else {
                vt_dist_engine e;
                vti_thr_engine(ends[k], &e);
                e.close(e.impl);
            }
            comms[k] = NULL;
        }
        VT_RETURN_ERROR(VT_ERR_NOMEM, "vt_dist_threads_open: out of memory");
    }
    return VT_OK;
}

void vt_dist_threads_stop(vt_comm *c, const char *why)
{
    if (c && c->thr) vti_thr_stop(c->thr, why);
}

int vt_dist_rank(const vt_comm *c) { return c ? c->rank : 0; }
int vt_dist_size(const vt_comm *c) { return c ? c->size : 1; }
int vt_dist_is_mpi(const vt_comm *c) { return c ? c->is_mpi : 0; }

vt_err vt_dist_set_engine(vt_comm *c, const vt_dist_engine *e)
{
    VT_RETURN_ERROR_IF(!c, VT_ERR_ARG, "vt_dist_set_engine: no communicator");
    VT_RETURN_ERROR_IF(c->thr, VT_ERR_UNSUPPORTED,
                       "vt_dist_set_engine: the communicator of thread shares has its own engine");
    VT_RETURN_ERROR_IF(e && (!e->impl || !e->allreduce_i64 || !e->allgatherv || !e->alltoallv || !e->bcast),
                       VT_ERR_ARG, "vt_dist_set_engine: an engine lacks an entry");
    if (c->eng.impl && c->eng.close) c->eng.close(c->eng.impl);
    memset(&c->eng, 0, sizeof c->eng);
    if (e) {
        c->eng = *e;
        c->eng.name[sizeof c->eng.name - 1] = 0;
    }
    return VT_OK;
}

const char *vt_dist_engine_name(const vt_comm *c)
{
    if (c && c->eng.impl) return c->eng.name;
    return c && c->is_mpi ? "mpi" : "local";
}

void vt_dist_clock(const vt_comm *c, vt_dist_clock_t *out)
{
    out->collectives = c ? c->n_coll : 0;
    out->exchanges = c ? c->n_a2a : 0;
    out->seconds = c ? c->t_coll : 0.0;
    out->cpu_seconds = c ? c->c_coll : 0.0;
}

#ifdef VT_HAVE_MPI
/* data[0..n) reduced in place across the ranks by op (an order-free one: sum, minimum) */
static vt_err allreduce_i64(vt_comm *c, int64_t *data, size_t n, MPI_Op op, const char *name)
{
    const size_t chunk = (size_t)1 << 28;
    for (size_t i = 0; i < n; i += chunk) {
        size_t m = n - i < chunk ? n - i : chunk;
        VTI_MPI(c, name, MPI_Allreduce(MPI_IN_PLACE, data + i, (int)m, MPI_INT64_T, op, c->comm));
    }
    return VT_OK;
}
#endif

vt_err vt_dist_allreduce_i64(vt_comm *c, int64_t *data, size_t n)
{
    VT_RETURN_ERROR_IF(!c || (n && !data), VT_ERR_ARG, "vt_dist_allreduce_i64: bad arguments");
    VTI_ENGINE(c, allreduce_i64(c->eng.impl, data, n, 0));
#ifdef VT_HAVE_MPI
    if (c->is_mpi) return allreduce_i64(c, data, n, MPI_SUM, "MPI_Allreduce (int64 sum)");
#endif
    return VT_OK; /* one rank: the sum is its own data */
}

vt_err vt_dist_allreduce_min_i64(vt_comm *c, int64_t *data, size_t n)
{
    VT_RETURN_ERROR_IF(!c || (n && !data), VT_ERR_ARG, "vt_dist_allreduce_min_i64: bad arguments");
    VTI_ENGINE(c, allreduce_i64(c->eng.impl, data, n, 1));
#ifdef VT_HAVE_MPI
    if (c->is_mpi) return allreduce_i64(c, data, n, MPI_MIN, "MPI_Allreduce (int64 min)");
#endif
    return VT_OK; /* one rank: the minimum is its own data */
}

vt_err vt_dist_allgather_f64(vt_comm *c, const double *mine, size_t n, double *all)
{
    VT_RETURN_ERROR_IF(!c || (n && (!mine || !all)), VT_ERR_ARG, "vt_dist_allgather_f64: bad arguments");
    VT_RETURN_ERROR_IF(n > (size_t)INT_MAX, VT_ERR_LIMIT, "rank %d of %d: allgather of %zu values per rank (at most %d)",
                       c->rank, c->size, n, INT_MAX);
    if (c->eng.impl) { /* as byte blocks of n * 8 bytes: the bits unchanged */
        size_t *bytes = malloc((size_t)c->size * sizeof *bytes);
        VT_RETURN_ERROR_IF(!bytes, VT_ERR_NOMEM, "rank %d of %d: allgather: out of memory", c->rank, c->size);
        for (int r = 0; r < c->size; r++) bytes[r] = n * sizeof(double);
        vt_err e;
        VTI_TIME(c, e = c->eng.allgatherv(c->eng.impl, mine, bytes, all));
        free(bytes);
        return e;
    }
#ifdef VT_HAVE_MPI
    if (c->is_mpi) {
        VTI_MPI(c, "MPI_Allgather (double)",
                MPI_Allgather(mine, (int)n, MPI_DOUBLE, all, (int)n, MPI_DOUBLE, c->comm));
        return VT_OK;
    }
#endif
    if (n) memcpy(all, mine, n * sizeof *all);
    return VT_OK;
}

/* MPI's counts and displacements of byte blocks (int): *total the sum; VT_ERR_LIMIT above INT_MAX.
 * cnt and dsp hold c->size entries each (NULL when the size is 1: not needed). */
static vt_err byte_layout(const vt_comm *c, const size_t *bytes, int *cnt, int *dsp, size_t *total, const char *what)
{
    size_t off = 0;
    for (int r = 0; r < c->size; r++) {
        VT_RETURN_ERROR_IF(bytes[r] > (size_t)INT_MAX || off > (size_t)INT_MAX - bytes[r], VT_ERR_LIMIT,
                           "rank %d of %d: %s of more than %d bytes", c->rank, c->size, what, INT_MAX);
        if (cnt) cnt[r] = (int)bytes[r], dsp[r] = (int)off;
        off += bytes[r];
    }
    *total = off;
    return VT_OK;
}

#ifdef VT_HAVE_MPI
static const char g_nothing; /* the send buffer of an empty block */
#endif

vt_err vt_dist_allgatherv(vt_comm *c, const void *mine, const size_t *bytes, void *all)
{
    VT_RETURN_ERROR_IF(!c || !bytes, VT_ERR_ARG, "vt_dist_allgatherv: bad arguments");
    VT_RETURN_ERROR_IF(bytes[c->rank] && !mine, VT_ERR_ARG, "vt_dist_allgatherv: bad arguments");
    size_t total = 0;
    if (c->eng.impl) {
        VT_FORWARD_IF_ERROR(byte_layout(c, bytes, NULL, NULL, &total, "allgatherv"));
        VT_RETURN_ERROR_IF(total && !all, VT_ERR_ARG, "vt_dist_allgatherv: bad arguments");
        VTI_ENGINE(c, allgatherv(c->eng.impl, mine, bytes, all));
    }
#ifdef VT_HAVE_MPI
    if (c->is_mpi) {
        int *cnt = malloc(2 * (size_t)c->size * sizeof *cnt);
        VT_RETURN_ERROR_IF(!cnt, VT_ERR_NOMEM, "rank %d of %d: allgatherv: out of memory", c->rank, c->size);
        vt_err e = byte_layout(c, bytes, cnt, cnt + c->size, &total, "allgatherv");
        if (!e && total && !all) e = vt_set_error(VT_ERR_ARG, "vt_dist_allgatherv: bad arguments");
        int rc = MPI_SUCCESS;
        if (!e)
            VTI_TIME(c, rc = MPI_Allgatherv(bytes[c->rank] ? mine : (const void *)&g_nothing, cnt[c->rank], MPI_BYTE,
                                            all, cnt, cnt + c->size, MPI_BYTE, c->comm));
        free(cnt);
        if (!e && rc != MPI_SUCCESS) e = mpi_fail(c->rank, c->size, rc, "MPI_Allgatherv (bytes)");
        return e;
    }
#endif
    VT_FORWARD_IF_ERROR(byte_layout(c, bytes, NULL, NULL, &total, "allgatherv"));
    VT_RETURN_ERROR_IF(total && !all, VT_ERR_ARG, "vt_dist_allgatherv: bad arguments");
    if (total) memcpy(all, mine, total);
    return VT_OK;
}

vt_err vt_dist_alltoallv(vt_comm *c, const void *send, const size_t *sbytes, void *recv, const size_t *rbytes)
{
    VT_RETURN_ERROR_IF(!c || !sbytes || !rbytes, VT_ERR_ARG, "vt_dist_alltoallv: bad arguments");
    size_t st = 0;
    if (c->eng.impl) {
        size_t rt = 0;
        VT_FORWARD_IF_ERROR(byte_layout(c, sbytes, NULL, NULL, &st, "alltoallv"));
        VT_FORWARD_IF_ERROR(byte_layout(c, rbytes, NULL, NULL, &rt, "alltoallv"));
        VT_RETURN_ERROR_IF((st && !send) || (rt && !recv), VT_ERR_ARG, "vt_dist_alltoallv: bad arguments");
        c->n_a2a++;
        VTI_ENGINE(c, alltoallv(c->eng.impl, send, sbytes, recv, rbytes));
    }
#ifdef VT_HAVE_MPI
    if (c->is_mpi) {
        size_t rt = 0;
        int *cnt = malloc(4 * (size_t)c->size * sizeof *cnt);
        VT_RETURN_ERROR_IF(!cnt, VT_ERR_NOMEM, "rank %d of %d: alltoallv: out of memory", c->rank, c->size);
        int *sc = cnt, *sd = cnt + c->size, *rcn = cnt + 2 * c->size, *rd = cnt + 3 * c->size;
        vt_err e = byte_layout(c, sbytes, sc, sd, &st, "alltoallv");
        if (!e) e = byte_layout(c, rbytes, rcn, rd, &rt, "alltoallv");
        if (!e && ((st && !send) || (rt && !recv))) e = vt_set_error(VT_ERR_ARG, "vt_dist_alltoallv: bad arguments");
        int rc = MPI_SUCCESS;
        if (!e) VTI_TIME(c, rc = MPI_Alltoallv(send, sc, sd, MPI_BYTE, recv, rcn, rd, MPI_BYTE, c->comm));
        c->n_a2a += !e;
        free(cnt);
        if (!e && rc != MPI_SUCCESS) e = mpi_fail(c->rank, c->size, rc, "MPI_Alltoallv (bytes)");
        return e;
    }
#endif
    VT_FORWARD_IF_ERROR(byte_layout(c, sbytes, NULL, NULL, &st, "alltoallv"));
    VT_RETURN_ERROR_IF(rbytes[0] != sbytes[0], VT_ERR_ARG, "vt_dist_alltoallv: one rank receives %zu bytes, sends %zu",
                       rbytes[0], sbytes[0]);
    VT_RETURN_ERROR_IF(st && (!send || !recv), VT_ERR_ARG, "vt_dist_alltoallv: bad arguments");
    if (st) memcpy(recv, send, st);
    return VT_OK;
}

vt_err vt_dist_allgather_blocks(vt_comm *c, const void *mine, size_t len, uint8_t **all, size_t **lens)
{
    VT_RETURN_ERROR_IF(!c || !all || !lens || (len && !mine), VT_ERR_ARG, "vt_dist_allgather_blocks: bad arguments");
    *all = NULL;
    *lens = NULL;
    const size_t n = (size_t)c->size;
    double *dl = malloc(n * sizeof *dl);
    size_t *bl = malloc(n * sizeof *bl);
    vt_err e = dl && bl ? VT_OK
                        : vt_set_error(VT_ERR_NOMEM, "rank %d of %d: gathering blocks: out of memory", c->rank, c->size);
    e = vt_dist_agree(c, e, NULL);
    const double my = (double)len; /* exact: a length beyond 2^53 bytes cannot be held */
    if (!e) e = vt_dist_allgather_f64(c, &my, 1, dl);
    size_t total = 0;
    for (size_t r = 0; r < n && !e; r++) { /* the same lengths on every rank: the same outcome */
        bl[r] = (size_t)dl[r];
        if (bl[r] > (size_t)INT_MAX - total)
            e = vt_set_error(VT_ERR_LIMIT, "rank %d of %d: the blocks gathered pass %d bytes", c->rank, c->size,
                             INT_MAX);
        else
            total += bl[r];
    }
    free(dl);
    uint8_t *buf = NULL;
    if (!e && total) {
        buf = malloc(total);
        e = vt_dist_agree(c, buf ? VT_OK
                                 : vt_set_error(VT_ERR_NOMEM, "rank %d of %d: gathering %zu bytes: out of memory",
                                                c->rank, c->size, total),
                          NULL);
        if (!e) e = vt_dist_allgatherv(c, mine, bl, buf);
    }
    if (e) {
        free(buf);
        free(bl);
        return e;
    }
    *all = buf;
    *lens = bl;
    return VT_OK;
}

vt_err vt_dist_bcast(vt_comm *c, void *buf, size_t len, int root)
{
    VT_RETURN_ERROR_IF(!c || (len && !buf), VT_ERR_ARG, "vt_dist_bcast: bad arguments");
    VT_RETURN_ERROR_IF(root < 0 || root >= c->size, VT_ERR_ARG, "rank %d of %d: broadcast from rank %d, which does not exist",
                       c->rank, c->size, root);
    VTI_ENGINE(c, bcast(c->eng.impl, buf, len, root));
#ifdef VT_HAVE_MPI
    if (c->is_mpi) {
        const size_t chunk = (size_t)1 << 30;
        for (size_t i = 0; i < len; i += chunk) {
            size_t m = len - i < chunk ? len - i : chunk;
            VTI_MPI(c, "MPI_Bcast", MPI_Bcast((char *)buf + i, (int)m, MPI_BYTE, root, c->comm));
        }
    }
#endif
    return VT_OK;
}

vt_err vt_dist_barrier(vt_comm *c)
{
    VT_RETURN_ERROR_IF(!c, VT_ERR_ARG, "vt_dist_barrier: no communicator");
    if (c->thr) {
        vt_err e;
        VTI_TIME(c, e = vti_thr_barrier(c->thr));
        return e;
    }
#ifdef VT_HAVE_MPI
    if (c->is_mpi) VTI_MPI(c, "MPI_Barrier", MPI_Barrier(c->comm));
#endif
    return VT_OK;
}

#define VTI_AGREE_MSG 480

vt_err vt_dist_agree(vt_comm *c, vt_err mine, int *failed_rank)
{
    if (failed_rank) *failed_rank = mine ? 0 : -1;
    VT_RETURN_ERROR_IF(!c, VT_ERR_ARG, "vt_dist_agree: no communicator");
    if (c->size == 1) return mine; /* one rank: its own outcome, its message unchanged */
    if (c->thr) {
        vt_err e;
        VTI_TIME(c, e = vti_thr_agree(c->thr, mine, failed_rank));
        return e;
    }
#ifdef VT_HAVE_MPI
    int *codes = malloc((size_t)c->size * sizeof *codes);
    VT_RETURN_ERROR_IF(!codes, VT_ERR_NOMEM, "rank %d of %d: agree: out of memory", c->rank, c->size);
    int my = (int)mine;
    int rc;
    VTI_TIME(c, rc = MPI_Allgather(&my, 1, MPI_INT, codes, 1, MPI_INT, c->comm));
    if (rc != MPI_SUCCESS) {
        free(codes);
        return mpi_fail(c->rank, c->size, rc, "MPI_Allgather (agree)");
    }
    int R = -1, others = 0;
    for (int r = 0; r < c->size; r++) {
        if (codes[r] == VT_OK) continue;
        if (R < 0) R = r;
        else others++;
    }
    free(codes);
    if (failed_rank) *failed_rank = R;
    if (R < 0) return VT_OK;
    struct {
        int32_t code;
        char msg[VTI_AGREE_MSG];
    } m;
    memset(&m, 0, sizeof m);
    if (c->rank == R) {
        m.code = (int32_t)mine;
        snprintf(m.msg, sizeof m.msg, "%s", vt_errmsg());
    }
    VTI_MPI(c, "MPI_Bcast (agree)", MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, R, c->comm));
    m.msg[sizeof m.msg - 1] = 0;
    vt_err e = m.code > 0 && m.code < VT_ERR_COUNT_ ? (vt_err)m.code : VT_ERR_INTERNAL;
    if (others)
        return vt_set_error(e, "rank %d of %d: %s (and %d other rank%s)", R, c->size, m.msg, others,
                            others == 1 ? "" : "s");
    return vt_set_error(e, "rank %d of %d: %s", R, c->size, m.msg);
#else
    return mine; /* unreachable: without MPI the size is 1 */
#endif
}
