/* vt_nccl.h - the communicator's NCCL engine for --backend cuda (docs/distributed.md "GPU ranks").
 * With several ranks and the CUDA backend, the data collectives of dist/ (the integer sums and
 * minima of the exact phase, the byte gathers and exchanges of the screen's FP64 partials and
 * bounds, broadcasts) run over NCCL between the ranks' GPUs instead of over MPI: vt_nccl_attach
 * creates the NCCL communicator and installs it in the vt_comm (vt_dist_set_engine). NCCL only
 * moves bytes and adds integers (ncclInt64 ncclSum / ncclMin): no floating-point value is ever
 * summed by it, so the results are the MPI engine's bits. The callers' arrays are on the host; the
 * engine stages them through a device buffer (host -> device, the NCCL call, device -> host).
 *
 * The engine lives in the CUDA plugin (backend/cuda/vt_nccl.c, built where CMake finds NCCL's header and
 * library: VT_NCCL, backend/cuda/nccl.cmake); vt_nccl_attach (backend/cuda/vt_nccl_host.c) is in every build and
 * says "this build has no NCCL" without it. */
#ifndef VT_NCCL_H
#define VT_NCCL_H

#include "../../common/vt_error.h"
#include "../../dist/vt_dist.h"
#include "../vt_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this build has the NCCL engine (VT_NCCL found NCCL with the CUDA backend), else 0. */
int vt_nccl_built(void);

/* Collective: every rank of comm calls it with its open "cuda" backend (vt_backend_open). Creates
 * the NCCL communicator on the backend's device (ncclGetUniqueId on rank 0, the id broadcast over
 * MPI with vt_dist_bcast, ncclCommInitRank) and installs it as comm's engine; vt_dist_finalize
 * closes it. One device per rank: more ranks on a machine (OMPI_COMM_WORLD_LOCAL_SIZE) than it has
 * GPUs is VT_ERR_UNSUPPORTED. Every failure is agreed (vt_dist_agree): the same error on every rank,
 * naming the lowest failing rank and the CUDA or NCCL call; VT_ERR_UNSUPPORTED for a build without
 * NCCL or a machine that cannot run it, VT_ERR_ARG for a backend that is not "cuda". */
vt_err vt_nccl_attach(const vt_backend *be, vt_comm *comm) VT_WARN_UNUSED;

/* The plugin's entry point behind vt_nccl_attach (looked up by name: a plugin without it has no
 * NCCL engine). The backend's device is the calling thread's current CUDA device. */
vt_err vt_cudap_nccl_attach(vt_comm *comm);

#ifdef __cplusplus
}
#endif

#endif
