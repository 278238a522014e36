/* vt_backend.h - opening a backend by name, beside the implementations (the table a backend fills
 * is backend/vt_backend.h; docs/cuda.md). The CPU reference is always present: a zeroed table,
 * every entry NULL, runs every kernel on the CPU (kernels/). */
#ifndef VT_CUDA_BACKEND_H
#define VT_CUDA_BACKEND_H

#include "../vt_backend.h"

/* Opens backend `name` ("cpu" or "cuda"). "cuda" gives VT_ERR_UNSUPPORTED with a message saying
 * why when this build has no CUDA or the machine has no usable GPU. */
vt_err vt_backend_open(const char *name, vt_backend *out) VT_WARN_UNUSED;
/* Releases it (idempotent; a zeroed backend is the CPU one). */
void vt_backend_close(vt_backend *b);

#endif
