/* vt_nccl_host.c - vt_nccl_attach (vt_nccl.h), in every build: it forwards to the CUDA plugin's
 * NCCL engine (backend/cuda/vt_nccl.c) in builds with NCCL, and says why not otherwise. */
#include "vt_nccl.h"

#include <string.h>

#ifdef VT_HAVE_NCCL
#include "vt_cuda_plugin.h"
#endif

int vt_nccl_built(void)
{
#ifdef VT_HAVE_NCCL
    return 1;
#else
    return 0;
#endif
}

vt_err vt_nccl_attach(const vt_backend *be, vt_comm *comm)
{
    VT_RETURN_ERROR_IF(!comm, VT_ERR_ARG, "vt_nccl_attach: no communicator");
    vt_err e = VT_OK;
    if (!be || !be->impl || strcmp(be->name, "cuda") != 0)
        e = vt_set_error(VT_ERR_ARG, "the NCCL engine needs the CUDA backend (--backend cuda), not \"%s\"",
                         be ? be->name : "none");
#ifdef VT_HAVE_NCCL
    vt_err (*attach)(vt_comm *) = NULL;
    if (!e) {
        *(void **)&attach = vti_cuda_plugin_sym("vt_cudap_nccl_attach");
        if (!attach)
            e = vt_set_error(VT_ERR_UNSUPPORTED, "the CUDA backend plugin has no NCCL engine (vt_cudap_nccl_attach): "
                                                 "rebuild it with NCCL present");
    }
    /* every rank goes on to the plugin's collectives, or none does */
    VT_FORWARD_IF_ERROR(vt_dist_agree(comm, e, NULL));
    return attach(comm);
#else
    if (!e)
        e = vt_set_error(VT_ERR_UNSUPPORTED, "this build has no NCCL (configured without NCCL's header and library "
                                             "beside the CUDA backend, VT_NCCL): the ranks' collectives cannot run "
                                             "between GPUs");
    return vt_dist_agree(comm, e, NULL);
#endif
}
