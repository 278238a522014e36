/* vt_data_int.h - what the data folder's sources share (private to data/). */
#ifndef VT_DATA_INT_H
#define VT_DATA_INT_H

#include <stddef.h>
#include <stdint.h>

#include "vt_data.h"

/* A dataset name: 1..63 printable ASCII characters (VT_ERR_ARG otherwise). */
vt_err vti_data_check_name(const char *name) VT_WARN_UNUSED;

/* A whole single-file payload (raw or gzip, at most max bytes, else VT_ERR_LIMIT): read, its SHA-256
 * into sha, the file closed. *out (malloc'd) holds *len bytes; an empty payload is returned as such. */
vt_err vti_data_read_whole(const char *path, size_t max, uint8_t **out, size_t *len,
                           uint8_t sha[VT_HASH_LEN]) VT_WARN_UNUSED;

#endif
