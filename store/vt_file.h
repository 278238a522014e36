/* vt_file.h - private to store/: durable file writes shared by the run store, checkpoints
 * and the commitment file (not installed, not for callers outside store/). */
#ifndef VT_FILE_H
#define VT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

/* A malloc'd formatted string, NULL when out of memory. */
char *vt__str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The directory part of path ("." when it has none), malloc'd; NULL when out of memory. */
char *vt__dir_of(const char *path);
/* fsync a directory so that a rename or a creation in it is durable (a file system that
 * cannot fsync directories is not an error). */
vt_err vt__fsync_dir(const char *dir) VT_WARN_UNUSED;
/* Write a whole file atomically and durably: a temporary file in the same directory, fwrite,
 * fflush, fsync, rename over path, fsync the directory. The temporary is removed on failure. */
vt_err vt__write_durable(const char *path, const uint8_t *data, size_t len) VT_WARN_UNUSED;

#endif
