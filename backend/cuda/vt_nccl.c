/* vt_nccl.c - the communicator's NCCL engine (vt_nccl.h; docs/distributed.md "GPU ranks"), part of
 * the CUDA plugin libvt_cuda.so in builds with NCCL (VT_HAVE_NCCL). It fills dist/'s engine table
 * (vt_dist_engine): dist/ never names NCCL or CUDA.
 *
 * The callers' buffers are host arrays: each call copies them into one grow-only device buffer,
 * runs NCCL on the engine's own stream, copies the result back and waits for the stream. NCCL moves
 * bytes (ncclUint8) and adds or compares int64 (ncclInt64 with ncclSum or ncclMin: integer
 * arithmetic, exact and order-free); it never adds a floating-point value. NCCL has no alltoallv
 * nor allgatherv: the exchange is a group of ncclSend / ncclRecv, the gather of unequal blocks a
 * group of ncclBroadcast (equal blocks: one ncclAllGather). Every failure returns a vt_err naming
 * the rank and the CUDA or NCCL call (ncclGetErrorString, NCCL's last error text); nothing exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "vt_cuda_plugin.h"
#include "vt_nccl.h"

typedef struct {
    ncclComm_t comm;
    cudaStream_t s;
    int dev, rank, size;
    unsigned char *d; /* the device staging buffer */
    size_t cap;
} vti_nccl;

static vt_err nccl_fail(const vti_nccl *x, ncclResult_t r, const char *call)
{
    const char *last = ncclGetLastError(x->comm);
    return vt_set_error(VT_ERR_IO, "rank %d of %d: %s failed: %s%s%.200s%s", x->rank, x->size, call,
                        ncclGetErrorString(r), last && *last ? " (" : "", last ? last : "", last && *last ? ")" : "");
}

static vt_err cuda_fail(const vti_nccl *x, cudaError_t e, const char *call)
{
    return vt_set_error(e == cudaErrorMemoryAllocation ? VT_ERR_NOMEM : VT_ERR_IO, "rank %d of %d: %s failed: %s",
                        x->rank, x->size, call, cudaGetErrorString(e));
}

#define NC(x, name, call)                                                                                              \
    do {                                                                                                               \
        ncclResult_t r_ = (call);                                                                                      \
        if (r_ != ncclSuccess) return nccl_fail((x), r_, name);                                                        \
    } while (0)
#define CUX(x, name, call)                                                                                             \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) return cuda_fail((x), e_, name);                                                        \
    } while (0)

/* the device staging buffer of at least `bytes`, on the engine's device */
static vt_err stage(vti_nccl *x, size_t bytes)
{
    CUX(x, "cudaSetDevice", cudaSetDevice(x->dev));
    if (bytes <= x->cap) return VT_OK;
    if (x->d) {
        CUX(x, "cudaStreamSynchronize", cudaStreamSynchronize(x->s));
        cudaFree(x->d);
        x->d = NULL;
        x->cap = 0;
    }
    size_t cap = bytes < ((size_t)1 << 20) ? (size_t)1 << 20 : bytes + bytes / 4;
    CUX(x, "cudaMalloc (NCCL staging)", cudaMalloc((void **)&x->d, cap));
    x->cap = cap;
    return VT_OK;
}

/* waits for the stream, then asks NCCL whether the communicator failed meanwhile */
static vt_err finish(vti_nccl *x)
{
    CUX(x, "cudaStreamSynchronize", cudaStreamSynchronize(x->s));
    ncclResult_t a = ncclSuccess;
    NC(x, "ncclCommGetAsyncError", ncclCommGetAsyncError(x->comm, &a));
    if (a != ncclSuccess) return nccl_fail(x, a, "the NCCL communicator");
    return VT_OK;
}

static vt_err eng_allreduce_i64(void *impl, int64_t *data, size_t n, int min)
{
    vti_nccl *x = impl;
    if (!n) return VT_OK;
    size_t bytes = n * sizeof *data;
    VT_FORWARD_IF_ERROR(stage(x, bytes));
    CUX(x, "cudaMemcpyAsync (to the device)", cudaMemcpyAsync(x->d, data, bytes, cudaMemcpyHostToDevice, x->s));
    NC(x, min ? "ncclAllReduce (ncclInt64, ncclMin)" : "ncclAllReduce (ncclInt64, ncclSum)",
       ncclAllReduce(x->d, x->d, n, ncclInt64, min ? ncclMin : ncclSum, x->comm, x->s));
    CUX(x, "cudaMemcpyAsync (to the host)", cudaMemcpyAsync(data, x->d, bytes, cudaMemcpyDeviceToHost, x->s));
    return finish(x);
}

static vt_err eng_allgatherv(void *impl, const void *mine, const size_t *bytes, void *all)
{
    vti_nccl *x = impl;
    size_t total = 0, off_me = 0;
    int equal = 1;
    for (int r = 0; r < x->size; r++) {
        if (r == x->rank) off_me = total;
        total += bytes[r];
        equal &= bytes[r] == bytes[0];
    }
    if (!total) return VT_OK;
    VT_FORWARD_IF_ERROR(stage(x, total));
    if (bytes[x->rank])
        CUX(x, "cudaMemcpyAsync (to the device)",
            cudaMemcpyAsync(x->d + off_me, mine, bytes[x->rank], cudaMemcpyHostToDevice, x->s));
    if (equal) { /* in place: this rank's block already at its offset */
        NC(x, "ncclAllGather (bytes)", ncclAllGather(x->d + off_me, x->d, bytes[0], ncclUint8, x->comm, x->s));
    } else { /* each rank's block broadcast from it, in one group */
        NC(x, "ncclGroupStart", ncclGroupStart());
        ncclResult_t rr = ncclSuccess;
        size_t off = 0;
        for (int r = 0; r < x->size && rr == ncclSuccess; off += bytes[r], r++)
            if (bytes[r]) rr = ncclBroadcast(x->d + off, x->d + off, bytes[r], ncclUint8, r, x->comm, x->s);
        ncclResult_t re = ncclGroupEnd();
        if (rr != ncclSuccess) return nccl_fail(x, rr, "ncclBroadcast (allgatherv)");
        if (re != ncclSuccess) return nccl_fail(x, re, "ncclGroupEnd (allgatherv)");
    }
    CUX(x, "cudaMemcpyAsync (to the host)", cudaMemcpyAsync(all, x->d, total, cudaMemcpyDeviceToHost, x->s));
    return finish(x);
}

static vt_err eng_alltoallv(void *impl, const void *send, const size_t *sbytes, void *recv, const size_t *rbytes)
{
    vti_nccl *x = impl;
    size_t st = 0, rt = 0;
    for (int r = 0; r < x->size; r++) st += sbytes[r], rt += rbytes[r];
    size_t rbase = (st + 255) / 256 * 256; /* the received blocks after the sent ones */
    VT_FORWARD_IF_ERROR(stage(x, rbase + rt + 1));
    if (st) CUX(x, "cudaMemcpyAsync (to the device)", cudaMemcpyAsync(x->d, send, st, cudaMemcpyHostToDevice, x->s));
    NC(x, "ncclGroupStart", ncclGroupStart());
    ncclResult_t rr = ncclSuccess;
    const char *what = "";
    size_t so = 0, ro = 0;
    for (int p = 0; p < x->size && rr == ncclSuccess; so += sbytes[p], ro += rbytes[p], p++) {
        if (sbytes[p]) rr = ncclSend(x->d + so, sbytes[p], ncclUint8, p, x->comm, x->s), what = "ncclSend (alltoallv)";
        if (rr == ncclSuccess && rbytes[p])
            rr = ncclRecv(x->d + rbase + ro, rbytes[p], ncclUint8, p, x->comm, x->s), what = "ncclRecv (alltoallv)";
    }
    ncclResult_t re = ncclGroupEnd();
    if (rr != ncclSuccess) return nccl_fail(x, rr, what);
    if (re != ncclSuccess) return nccl_fail(x, re, "ncclGroupEnd (alltoallv)");
    if (rt)
        CUX(x, "cudaMemcpyAsync (to the host)", cudaMemcpyAsync(recv, x->d + rbase, rt, cudaMemcpyDeviceToHost, x->s));
    return finish(x);
}

static vt_err eng_bcast(void *impl, void *buf, size_t len, int root)
{
    vti_nccl *x = impl;
    if (!len) return VT_OK;
    VT_FORWARD_IF_ERROR(stage(x, len));
    if (x->rank == root)
        CUX(x, "cudaMemcpyAsync (to the device)", cudaMemcpyAsync(x->d, buf, len, cudaMemcpyHostToDevice, x->s));
    NC(x, "ncclBroadcast", ncclBroadcast(x->d, x->d, len, ncclUint8, root, x->comm, x->s));
    if (x->rank != root)
        CUX(x, "cudaMemcpyAsync (to the host)", cudaMemcpyAsync(buf, x->d, len, cudaMemcpyDeviceToHost, x->s));
    return finish(x);
}

static void eng_close(void *impl)
{
    vti_nccl *x = impl;
    if (!x) return;
    (void)cudaSetDevice(x->dev);
    if (x->s) (void)cudaStreamSynchronize(x->s);
    if (x->comm) (void)ncclCommDestroy(x->comm);
    if (x->d) cudaFree(x->d);
    if (x->s) (void)cudaStreamDestroy(x->s);
    free(x);
}

/* this rank's part before the communicator: the device, one GPU per local rank, rank 0's id */
static vt_err prepare(vti_nccl *x, ncclUniqueId *id)
{
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    VT_RETURN_ERROR_IF(ce != cudaSuccess || ndev < 1, VT_ERR_UNSUPPORTED, "no CUDA GPU is usable here (%s)",
                       ce != cudaSuccess ? cudaGetErrorString(ce) : "no device");
    ce = cudaGetDevice(&x->dev);
    VT_RETURN_ERROR_IF(ce != cudaSuccess, VT_ERR_IO, "cudaGetDevice failed: %s", cudaGetErrorString(ce));
    const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    long local = ls && *ls ? strtol(ls, NULL, 10) : 1;
    VT_RETURN_ERROR_IF(local > ndev, VT_ERR_UNSUPPORTED,
                       "%ld ranks on this machine share its %d GPU%s: NCCL needs a GPU for each rank (one device per "
                       "rank: the local rank modulo the device count); run at most %d rank%s a machine",
                       local, ndev, ndev == 1 ? "" : "s", ndev, ndev == 1 ? "" : "s");
    ce = cudaStreamCreateWithFlags(&x->s, cudaStreamNonBlocking);
    VT_RETURN_ERROR_IF(ce != cudaSuccess, VT_ERR_IO, "cudaStreamCreateWithFlags failed: %s", cudaGetErrorString(ce));
    if (x->rank == 0) {
        ncclResult_t r = ncclGetUniqueId(id);
        VT_RETURN_ERROR_IF(r != ncclSuccess, VT_ERR_IO, "ncclGetUniqueId failed: %s", ncclGetErrorString(r));
    }
    return VT_OK;
}

VT_CUDAP_EXPORT vt_err vt_cudap_nccl_attach(vt_comm *comm)
{
    vti_nccl *x = calloc(1, sizeof *x);
    vt_err e = x ? VT_OK : vt_set_error(VT_ERR_NOMEM, "out of memory");
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (x) {
        x->rank = vt_dist_rank(comm);
        x->size = vt_dist_size(comm);
        e = prepare(x, &id);
    }
    e = vt_dist_agree(comm, e, NULL); /* the local failures: every rank stops, the lowest named */
    if (!e) e = vt_dist_bcast(comm, &id, sizeof id, 0); /* over MPI: no engine yet */
    if (!e) {
        ncclResult_t r = ncclCommInitRank(&x->comm, x->size, id, x->rank);
        if (r != ncclSuccess) {
            x->comm = NULL;
            e = vt_set_error(VT_ERR_IO, "ncclCommInitRank on GPU %d failed: %s", x->dev, ncclGetErrorString(r));
        }
        e = vt_dist_agree(comm, e, NULL);
    }
    if (e) {
        eng_close(x);
        return e;
    }
    vt_dist_engine eng;
    memset(&eng, 0, sizeof eng);
    snprintf(eng.name, sizeof eng.name, "nccl");
    eng.impl = x;
    eng.allreduce_i64 = eng_allreduce_i64;
    eng.allgatherv = eng_allgatherv;
    eng.alltoallv = eng_alltoallv;
    eng.bcast = eng_bcast;
    eng.close = eng_close;
    e = vt_dist_set_engine(comm, &eng); /* local; fails only on a malformed table */
    if (e) eng_close(x);
    return e;
}
