/* vt_file_int.h - private to store/: durable file writes shared by the run store, checkpoints,
 * the commitment file and the safetensors writer (not for callers outside store/). */
#ifndef VT_FILE_INT_H
#define VT_FILE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/vt_error.h"

/* A malloc'd formatted string, NULL when out of memory. */
char *vti_str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The directory part of path ("." when it has none), malloc'd; NULL when out of memory. */
char *vti_dir_of(const char *path);
/* fsync a directory so that a rename or a creation in it is durable (a file system that
 * cannot fsync directories is not an error). */
vt_err vti_fsync_dir(const char *dir) VT_WARN_UNUSED;
/* A file written atomically and durably, in pieces: vti_dfile_open creates the temporary in
 * path's directory, vti_dfile_write appends to it, vti_dfile_commit flushes and fsyncs it,
 * renames it over path and fsyncs the directory. A failed commit, and vti_dfile_abort, remove
 * the temporary; after a failed write the caller aborts. */
typedef struct {
    FILE *f;
    char *tmp;
    char *path;
    const char *point; /* NULL, or the prefix of the write points this file passes (vti_fault) */
} vti_dfile;
/* unique = 1: a temporary of this call's own, path.tmp-<pid>-<k>, created exclusively;
 * unique = 0: path.tmp, replacing one that an interrupted writer left. */
vt_err vti_dfile_open(vti_dfile *d, const char *path, int unique) VT_WARN_UNUSED;
vt_err vti_dfile_write(vti_dfile *d, const void *p, size_t n) VT_WARN_UNUSED;
vt_err vti_dfile_commit(vti_dfile *d) VT_WARN_UNUSED;
void vti_dfile_abort(vti_dfile *d);

/* A whole file at once, through a vti_dfile with a unique temporary. */
vt_err vti_write_durable(const char *path, const uint8_t *data, size_t len) VT_WARN_UNUSED;
/* The same, passing the write points POINT.tmp-created, .tmp-half (half the bytes written and
 * flushed), .tmp-written, .tmp-synced, .renamed and .dir-synced (docs/format.md "Write order"). */
vt_err vti_write_durable_at(const char *path, const uint8_t *data, size_t len, const char *point) VT_WARN_UNUSED;

/* A write point of the run directory: calls the test builds' fault hook (vt_store_set_fault_hook)
 * with "PREFIX.NAME" (or NAME when prefix is NULL); nothing in production. */
void vti_fault(const char *prefix, const char *name);

#endif
