/* vt_safetensors.h - a writer of safetensors files (the format of Hugging Face's safetensors
 * library), for exporting tensors to other tools: docs/format.md, "Export (safetensors)".
 *
 * Layout: u64 little-endian N, N bytes of UTF-8 JSON header (padded with spaces so that 8 + N
 * is a multiple of 8), then the tensors' bytes, little-endian, contiguous, in the order given:
 *   {"NAME":{"dtype":"F32","shape":[2,3],"data_offsets":[BEGIN,END]},...,
 *    "__metadata__":{"KEY":"VALUE",...}}
 * with BEGIN and END byte offsets relative to the start of the data section.
 */
#ifndef VT_SAFETENSORS_H
#define VT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

/* Element types and their names in the header: "F32", "F64", "U8", "I32", "I64" (the last two
 * two's complement). */
typedef enum { VT_ST_F32, VT_ST_F64, VT_ST_U8, VT_ST_I32, VT_ST_I64 } vt_st_dtype;

/* One tensor: shape[0 .. rank-1] (row-major, rank 0 = a scalar of one element), every
 * dimension at least 1; data holds the product of the dimensions elements of dtype (float,
 * double, uint8_t, int32_t, int64_t) in the host's byte order, at any alignment. */
typedef struct {
    const char *name;     /* non-empty UTF-8, unique, not "__metadata__" */
    vt_st_dtype dtype;
    uint32_t rank;        /* 0 .. 4 */
    uint64_t shape[4];
    const void *data;
} vt_st_tensor;

/* Write n tensors (t may be NULL when n = 0) and n_meta metadata pairs (meta_kv holds
 * 2 * n_meta strings: key, value, key, value ...; UTF-8, keys unique; the "__metadata__"
 * object is left out when n_meta = 0) to path. The file is written to path + ".tmp", fsynced
 * and renamed over path (then the directory is fsynced), so a failed export never leaves a
 * partial file at path; the temporary is removed on every error.
 * Errors: VT_ERR_ARG for an empty, duplicate, non-UTF-8 or reserved ("__metadata__") name, a
 * rank above 4, a zero-size tensor, an unknown dtype, a NULL pointer or an invalid or duplicate
 * metadata key (checked before any file is created); VT_ERR_LIMIT for sizes beyond 2^63 - 1
 * bytes or a header over 100,000,000 bytes (the limit of safetensors readers); VT_ERR_IO,
 * VT_ERR_NOMEM. */
vt_err vt_safetensors_write(const char *path, const vt_st_tensor *t, size_t n, const char *const *meta_kv,
                            size_t n_meta) VT_WARN_UNUSED;

#endif
