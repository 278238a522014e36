/* vt_store.h - the run directory's SQLite run store: creating and opening RUN_DIR, the
 * manifest, per-step records and logs.
 *
 * RUN_DIR/
 *   run.db              SQLite (WAL), schema versioned: manifest, per-step records, checkpoints
 *   checkpoints/ckpt-<step, 12 digits>.vtck   zstd-compressed state (vt_checkpoint.h)
 *   commitment.vtc      signed commitment (vt_commitment.h)
 *   run.lock            the writer's lock (flock) and its PID
 * Formats, the order of writes and the lock in docs/format.md.
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

/* Create RUN_DIR (must not exist, be empty, or hold only what an interrupted creation left:
 * run.lock, an empty checkpoints/, run.db.new[-journal]) with a new store holding the manifest.
 * run.db appears (renamed from run.db.new) only once its schema and manifest are committed.
 * Takes the run directory's writer lock, as a writable open does. */
vt_err vt_store_create(const char *run_dir, const char *manifest, size_t manifest_len,
                       vt_store **out) VT_WARN_UNUSED;
/* Open an existing store; readonly = 1 for auditors (never writes, no WAL checkpoint, no lock).
 * A writable open takes the writer lock RUN_DIR/run.lock (flock, exclusive, not waiting: a second
 * writer gets VT_ERR_IO naming the holder's PID) and removes the temporaries that killed writers
 * left (checkpoints/ckpt-*.vtck.tmp-*, commitment.vtc.tmp-*). */
vt_err vt_store_open(const char *run_dir, int readonly, vt_store **out) VT_WARN_UNUSED;
/* Make run.db self-contained before the run is committed: fold run.db-wal into it, waiting up to
 * wait_ms for readers that hold an older snapshot (an open read transaction), then switch back to
 * rollback-journal mode when no other process has run.db open (else it stays in WAL mode, every
 * page in run.db). Prints one line to stderr when it has to wait. VT_ERR_IO when readers still
 * block after wait_ms, naming them (their PIDs where /proc/locks tells). */
vt_err vt_store_finish(vt_store *s, int wait_ms) VT_WARN_UNUSED;
/* Closes; a writable store also tries, without waiting, to fold the WAL and releases the lock. */
void vt_store_close(vt_store *s);

/* Test builds only: fn is called with the name of each write point of the run directory as the
 * writer passes it (docs/format.md "Run directory"); trainer-test --kill-at stops the process
 * there. NULL (the default, and always in production): nothing is called. */
typedef void vt_store_fault_fn(const char *point);
void vt_store_set_fault_hook(vt_store_fault_fn *fn);

/* A file of the run directory besides the store (e.g. init.safetensors, trainer train --init): written
 * atomically and durably to RUN_DIR/NAME (write points "file.*": docs/format.md "Run directory"). */
vt_err vt_store_put_file(const char *run_dir, const char *name, const uint8_t *data, size_t len) VT_WARN_UNUSED;

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
