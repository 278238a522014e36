/* vt_store_int.h - private to store/: the run store's handle and the SQLite helpers
 * that vt_store.c (the store) and vt_checkpoint.c (the checkpoints it records) share. */
#ifndef VT_STORE_INT_H
#define VT_STORE_INT_H

#include <sqlite3.h>

#include "vt_checkpoint.h"
#include "vt_store.h"

struct vt_store {
    sqlite3 *db;
    int readonly;
    int lock_fd;   /* RUN_DIR/run.lock, flock'd exclusively by a writer; -1 for readers */
    char *run_dir;
    char *db_path;
    sqlite3_stmt *begin, *commit, *rollback;
    sqlite3_stmt *meta_get;
    sqlite3_stmt *minmax;
    sqlite3_stmt *put_step, *get_step, *get_log, *del_steps;
    sqlite3_stmt *put_ckpt, *get_ckpt, *list_ckpt, *ckpts_after, *del_ckpts;
};

/* vt_store.c */
/* An SQLite result code as a vt_err with a message naming the store file. */
vt_err vti_store_db_fail(vt_store *s, int rc, const char *what);
/* Reset a statement and clear its bindings (NULL is allowed). */
void vti_store_stmt_done(sqlite3_stmt *st);
/* Bind ?1 to a step number (< INT64_MAX); on failure the statement is reset. */
vt_err vti_store_bind_step(vt_store *s, sqlite3_stmt *st, uint64_t step) VT_WARN_UNUSED;
/* Run a statement that returns no rows. */
vt_err vti_store_exec(vt_store *s, sqlite3_stmt *st, const char *what) VT_WARN_UNUSED;
/* An INTEGER column in [0, max] / a BLOB column of exactly 32 bytes; errors name the row. */
vt_err vti_store_col_uint(vt_store *s, sqlite3_stmt *st, int col, uint64_t max, uint64_t *out, const char *field,
                          uint64_t step) VT_WARN_UNUSED;
vt_err vti_store_col_hash(vt_store *s, sqlite3_stmt *st, int col, uint8_t out[VT_HASH_LEN], const char *field,
                          const char *table, uint64_t step) VT_WARN_UNUSED;
/* Every step number (column 0, a non-negative INTEGER) a bound statement returns, in a
 * malloc'd array; the statement is reset. */
vt_err vti_store_steps_of(vt_store *s, sqlite3_stmt *st, uint64_t **steps, size_t *n) VT_WARN_UNUSED;

/* vt_checkpoint.c */
/* RUN_DIR/checkpoints, malloc'd (NULL when out of memory). */
char *vti_ckpt_dir(const char *run_dir);
/* Delete the files of these checkpoints (already gone from the store) and every other
 * checkpoint file of a step after `after` (written but never recorded: a writer killed in
 * between), then fsync the directory. */
vt_err vti_ckpt_remove_files(vt_store *s, const uint64_t *steps, size_t n, uint64_t after) VT_WARN_UNUSED;
/* Remove the temporaries of killed writers: checkpoints/ckpt-*.vtck.tmp-* (writer lock held). */
void vti_ckpt_remove_temps(vt_store *s);

#endif
