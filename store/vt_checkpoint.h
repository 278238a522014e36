/* vt_checkpoint.h - checkpoints of a run: RUN_DIR/checkpoints/ckpt-<step, 12 digits>.vtck,
 * the training state as n FP32 values in one zstd frame behind a 24-byte header (format in
 * docs/format.md, "Checkpoint file"), each recorded with its file hash in the run store. */
#ifndef VT_CHECKPOINT_H
#define VT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

typedef struct vt_store vt_store; /* vt_store.h */

/* Write: compress the state (n FP32 values) into RUN_DIR/checkpoints, atomically (temp
 * file, fsync, rename), then record (step, file hash) in the store. */
vt_err vt_store_put_checkpoint(vt_store *s, uint64_t step, const float *state, size_t n,
                               int zstd_level) VT_WARN_UNUSED;
/* Read a checkpoint: checks the file hash against the store, the header, the sizes; returns
 * a malloc'd array of n FP32 values (n must equal expected_n). */
vt_err vt_store_get_checkpoint(vt_store *s, uint64_t step, size_t expected_n, float **state) VT_WARN_UNUSED;
/* Checkpointed steps in increasing order (malloc'd array). */
vt_err vt_store_list_checkpoints(vt_store *s, uint64_t **steps, size_t *n) VT_WARN_UNUSED;

/* Path helper: RUN_DIR/checkpoints/ckpt-%012llu.vtck */
void vt_store_checkpoint_path(const char *run_dir, uint64_t step, char *out, size_t cap);

#endif
