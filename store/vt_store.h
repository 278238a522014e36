/* vt_store.h - the run directory: SQLite run store, checkpoints, commitment file.
 *
 * RUN_DIR/
 *   run.db              SQLite (WAL), schema versioned: manifest, per-step records, checkpoints
 *   checkpoints/ckpt-<step, 12 digits>.vtck   zstd-compressed state (format in docs/format.md)
 *   commitment.vtc      signed commitment (format in docs/format.md)
 *
 * Every reader treats files as hostile: magic, version, lengths and hashes are checked
 * and failures are VT_ERR_FORMAT / VT_ERR_DB / VT_ERR_IO with a message naming the file.
 */
#ifndef VT_STORE_H
#define VT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../common/vt_hash.h"

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

/* Checkpoints. write: compress the state (n FP32 values) into RUN_DIR/checkpoints,
 * atomically (temp file, fsync, rename), then record (step, file hash) in the store. */
vt_err vt_store_put_checkpoint(vt_store *s, uint64_t step, const float *state, size_t n,
                               int zstd_level) VT_WARN_UNUSED;
/* Read a checkpoint: checks the file hash against the store, the header, the sizes; returns
 * a malloc'd array of n FP32 values (n must equal expected_n). */
vt_err vt_store_get_checkpoint(vt_store *s, uint64_t step, size_t expected_n, float **state) VT_WARN_UNUSED;
/* Checkpointed steps in increasing order (malloc'd array). */
vt_err vt_store_list_checkpoints(vt_store *s, uint64_t **steps, size_t *n) VT_WARN_UNUSED;

/* ------------------------------------------------------------ commitment */

typedef struct {
    uint32_t version;                 /* 1 */
    uint8_t manifest_hash[VT_HASH_LEN];
    uint64_t step_count;              /* leaves in the tree = last step + 1 */
    uint8_t root[VT_HASH_LEN];
    uint8_t public_key[32];
    uint8_t signature[64];            /* Ed25519 over the 4+4+32+8+32+32 byte body */
} vt_commitment;

/* Canonical body bytes that are signed: "VTCM" u32 version, manifest hash, u64 step count,
 * root, public key (112 bytes). */
#define VT_COMMITMENT_BODY_LEN 112
#define VT_COMMITMENT_FILE_LEN (VT_COMMITMENT_BODY_LEN + 64)
void vt_commitment_body(const vt_commitment *c, uint8_t out[VT_COMMITMENT_BODY_LEN]);
/* Write atomically (temp + fsync + rename) / read with every field checked (not the signature). */
vt_err vt_commitment_write(const char *path, const vt_commitment *c) VT_WARN_UNUSED;
vt_err vt_commitment_read(const char *path, vt_commitment *c) VT_WARN_UNUSED;

/* Path helpers: RUN_DIR/commitment.vtc, RUN_DIR/checkpoints/ckpt-%012llu.vtck */
void vt_store_commitment_path(const char *run_dir, char *out, size_t cap);
void vt_store_checkpoint_path(const char *run_dir, uint64_t step, char *out, size_t cap);

#endif
