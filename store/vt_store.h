/* vt_store.h - the run directory's SQLite run store: creating and opening RUN_DIR, the
 * manifest, per-step records and logs.
 *
 * RUN_DIR/
 *   run.db              SQLite (WAL), schema versioned: manifest, per-step records, checkpoints
 *   checkpoints/ckpt-<step, 12 digits>.vtck   zstd-compressed state (vt_checkpoint.h)
 *   commitment.vtc      signed commitment (vt_commitment.h)
 * Formats in docs/format.md.
 *
 * Every reader treats files as hostile: magic, version, lengths and hashes are checked
 * and failures are VT_ERR_FORMAT / VT_ERR_DB / VT_ERR_IO with a message naming the file.
 *
 * This header also includes vt_checkpoint.h and vt_commitment.h, so that a caller of the
 * whole run directory needs one include.
 */
#ifndef VT_STORE_H
#define VT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../common/vt_hash.h"
#include "vt_checkpoint.h"
#include "vt_commitment.h"

#define VT_STORE_SCHEMA_VERSION 1

typedef struct vt_store vt_store; /* opaque: a sqlite3 handle and prepared statements */

/* One step's record. Step 0 is the initial state (empty log). */
typedef struct {
    uint64_t step;
    uint32_t loss_bits;           /* FP32 loss bits (0 for step 0) */
    int has_state;                /* 1 when the state hash was committed at this step */
    uint8_t state_hash[VT_HASH_LEN];
    uint8_t log_hash[VT_HASH_LEN];
    uint8_t leaf[VT_HASH_LEN];
    uint64_t log_entries;         /* entries in the step's log (informational) */
} vt_step_rec;

/* Create RUN_DIR (must not exist, or be empty) with a new store holding the manifest. */
vt_err vt_store_create(const char *run_dir, const char *manifest, size_t manifest_len,
                       vt_store **out) VT_WARN_UNUSED;
/* Open an existing store; readonly = 1 for auditors (never writes, no WAL checkpoint). */
vt_err vt_store_open(const char *run_dir, int readonly, vt_store **out) VT_WARN_UNUSED;
void vt_store_close(vt_store *s);

/* The manifest bytes (malloc'd, caller frees) and its SHA-256. */
vt_err vt_store_manifest(vt_store *s, char **manifest, size_t *len, uint8_t hash[VT_HASH_LEN]) VT_WARN_UNUSED;

/* Append one step in ONE transaction: the record and its compressed log blob. Steps must
 * be appended in order (step == last + 1, or 0 first). */
vt_err vt_store_put_step(vt_store *s, const vt_step_rec *r, const uint8_t *log_blob, size_t log_len) VT_WARN_UNUSED;
/* Number of steps recorded = last step + 1 (0 when empty). */
vt_err vt_store_step_count(vt_store *s, uint64_t *count) VT_WARN_UNUSED;
vt_err vt_store_get_step(vt_store *s, uint64_t step, vt_step_rec *r) VT_WARN_UNUSED;
/* The step's compressed log blob (malloc'd, caller frees); at most max_len bytes accepted. */
vt_err vt_store_get_log(vt_store *s, uint64_t step, uint8_t **blob, size_t *len) VT_WARN_UNUSED;
/* Delete every step > step (and checkpoints > step) in one transaction (resume). */
vt_err vt_store_truncate(vt_store *s, uint64_t step) VT_WARN_UNUSED;

#endif
