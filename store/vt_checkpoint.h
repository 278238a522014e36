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
/* Streamed (bounded memory whatever n): the same file, written and read a piece at a time.
 * The writer: vt_ckpt_write_open (the header to a temporary of its own, the write point
 * ckpt.tmp-created), vt_ckpt_write_append of the n values in state order, in pieces of any size
 * (ckpt.tmp-half once half of them are in), vt_ckpt_write_finish (the zstd frame ended: one frame
 * compressed by ZSTD_compressStream2 with n*4 pledged, so its header declares its size; the file
 * fsync'd and renamed, ckpt.tmp-written ... ckpt.dir-synced; then (step, file hash, n) recorded,
 * ckpt.recorded). Its bytes may differ from an earlier writer's (zstd's block split): checkpoint
 * files are not committed, only read back. vt_ckpt_write_abort (NULL allowed) removes the
 * temporary; finish frees the writer whatever it returns. vt_store_put_checkpoint is open,
 * one append, finish. */
typedef struct vt_ckpt_writer vt_ckpt_writer;
vt_err vt_ckpt_write_open(vt_store *s, uint64_t step, size_t n, int zstd_level, vt_ckpt_writer **w) VT_WARN_UNUSED;
vt_err vt_ckpt_write_append(vt_ckpt_writer *w, const float *v, size_t count) VT_WARN_UNUSED;
vt_err vt_ckpt_write_finish(vt_ckpt_writer *w) VT_WARN_UNUSED;
void vt_ckpt_write_abort(vt_ckpt_writer *w);
/* The reader: vt_ckpt_read_open checks the record, the file's size (at most the largest file of
 * expected_n values), the header and the frame's header (its declared size n*4); vt_ckpt_read
 * decodes the next count values (a frame that ends early, a file that ends within the frame:
 * VT_ERR_FORMAT; a corrupt frame: VT_ERR_MISMATCH when the file's bytes differ from the recorded
 * ones, else VT_ERR_FORMAT); vt_ckpt_read_close, after all n values, checks that the frame ends
 * there and the file with it (trailing bytes: VT_ERR_FORMAT) and the file hash, computed as the
 * bytes were read, against the record (VT_ERR_MISMATCH). Values read before close are not
 * trusted until close returns VT_OK. close and abort free the reader (abort: NULL allowed).
 * vt_store_get_checkpoint is open, one read, close. */
typedef struct vt_ckpt_reader vt_ckpt_reader;
vt_err vt_ckpt_read_open(vt_store *s, uint64_t step, size_t expected_n, vt_ckpt_reader **r) VT_WARN_UNUSED;
vt_err vt_ckpt_read(vt_ckpt_reader *r, float *v, size_t count) VT_WARN_UNUSED;
vt_err vt_ckpt_read_close(vt_ckpt_reader *r) VT_WARN_UNUSED;
void vt_ckpt_read_abort(vt_ckpt_reader *r);

/* Checkpointed steps in increasing order (malloc'd array). */
vt_err vt_store_list_checkpoints(vt_store *s, uint64_t **steps, size_t *n) VT_WARN_UNUSED;

/* Path helper: RUN_DIR/checkpoints/ckpt-%012llu.vtck */
void vt_store_checkpoint_path(const char *run_dir, uint64_t step, char *out, size_t cap);

#endif
