/* vt_store.c - the run directory's SQLite run store: run.db (manifest, steps, logs and the
 * checkpoint records that vt_checkpoint.c writes and reads).
 *
 * run.db is an SQLite database in WAL mode with synchronous=NORMAL: a step is in the WAL
 * once vt_store_put_step has returned, so a kill -9 afterwards keeps it; a power cut may
 * lose the steps since the last WAL sync, which `trainer train --resume` recomputes from
 * the last checkpoint (checkpoint files themselves are fsynced before they are recorded).
 * vt_store_finish, before the trainer writes its commitment, copies every page of the WAL
 * into run.db (TRUNCATE), waiting (bounded) for readers that hold an older snapshot and
 * failing loudly if they still do, then switches the file back to rollback-journal mode
 * when no one else has it open: a committed run's run.db holds every step and can be
 * copied alone (docs/format.md "The end of a run"). A run that is still being written, or
 * whose trainer was killed, also has run.db-wal; copy it along with run.db.
 *
 * A writer holds RUN_DIR/run.lock (flock, its PID inside) from open or create to close; a
 * second writer is refused naming it. run.db is created as run.db.new and renamed once its
 * schema and manifest are committed. The named write points (vti_fault) and what a crash at
 * each leaves: docs/format.md "Run directory".
 *
 * Every value read back is treated as hostile: the schema is checked on open (only our
 * three tables, no views or triggers), every column is type- and length-checked, and
 * SQLite's "not a database" / "corrupt" results become VT_ERR_FORMAT naming the file.
 * Schema: docs/format.md ("Run store").
 */
#include "vt_store.h"

#include "../arch/vt_recipe.h" /* VT_JSON_MAX_BYTES */

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "vt_file_int.h"
#include "vt_store_int.h"

/* Largest compressed step log accepted (put and get). The codec itself limits a decoded
 * payload to 256 MiB by default; a compressed container is never much larger. */
#define VT_STORE_MAX_LOG_BYTES ((size_t)512 << 20)
#define BUSY_TIMEOUT_MS 10000

/* ------------------------------------------------------------------ helpers */

/* Map an SQLite result code to a vt_err with a message naming the store file. */
static vt_err db_fail_path(sqlite3 *db, const char *path, int rc, const char *what)
{
    const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    switch (rc & 0xff) {
    case SQLITE_NOTADB:
        return vt_set_error(VT_ERR_FORMAT, "not a run store: %s is not an SQLite database (%s: %s)",
                            path, what, msg);
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
        return vt_set_error(VT_ERR_FORMAT, "run store %s is corrupt (%s: %s)", path, what, msg);
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_FULL:
        return vt_set_error(VT_ERR_IO, "run store %s: %s: %s", path, what, msg);
    default:
        return vt_set_error(VT_ERR_DB, "run store %s: %s: %s (sqlite code %d)", path, what, msg, rc);
    }
}

vt_err vti_store_db_fail(vt_store *s, int rc, const char *what)
{
    return db_fail_path(s->db, s->db_path, rc, what);
}

void vti_store_stmt_done(sqlite3_stmt *st)
{
    if (st) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
}

vt_err vti_store_bind_step(vt_store *s, sqlite3_stmt *st, uint64_t step)
{
    int rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)step);
    if (rc == SQLITE_OK) return VT_OK;
    vti_store_stmt_done(st);
    return vti_store_db_fail(s, rc, "binding");
}

vt_err vti_store_exec(vt_store *s, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    vti_store_stmt_done(st);
    if (rc != SQLITE_DONE) return vti_store_db_fail(s, rc, what);
    return VT_OK;
}

static void rollback(vt_store *s)
{
    if (!sqlite3_get_autocommit(s->db)) {
        sqlite3_step(s->rollback);
        sqlite3_reset(s->rollback);
    }
}

vt_err vti_store_col_uint(vt_store *s, sqlite3_stmt *st, int col, uint64_t max, uint64_t *out,
                          const char *field, uint64_t step)
{
    if (sqlite3_column_type(st, col) != SQLITE_INTEGER)
        VT_RETURN_ERROR(VT_ERR_FORMAT, "run store %s: step %llu: %s is not an integer", s->db_path,
                        (unsigned long long)step, field);
    sqlite3_int64 v = sqlite3_column_int64(st, col);
    if (v < 0 || (uint64_t)v > max)
        VT_RETURN_ERROR(VT_ERR_FORMAT, "run store %s: step %llu: %s = %lld is out of range", s->db_path,
                        (unsigned long long)step, field, (long long)v);
    *out = (uint64_t)v;
    return VT_OK;
}

vt_err vti_store_col_hash(vt_store *s, sqlite3_stmt *st, int col, uint8_t out[VT_HASH_LEN],
                          const char *field, const char *table, uint64_t step)
{
    if (sqlite3_column_type(st, col) != SQLITE_BLOB || sqlite3_column_bytes(st, col) != VT_HASH_LEN)
        VT_RETURN_ERROR(VT_ERR_FORMAT, "run store %s: %s %llu: %s is not a %d-byte blob", s->db_path, table,
                        (unsigned long long)step, field, VT_HASH_LEN);
    const void *p = sqlite3_column_blob(st, col);
    if (!p) VT_RETURN_ERROR(VT_ERR_NOMEM, "run store %s: out of memory reading %s", s->db_path, field);
    memcpy(out, p, VT_HASH_LEN);
    return VT_OK;
}

vt_err vti_store_steps_of(vt_store *s, sqlite3_stmt *st, uint64_t **steps, size_t *n)
{
    *steps = NULL;
    *n = 0;
    uint64_t *v = NULL;
    size_t len = 0, cap = 0;
    vt_err e = VT_OK;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 0) != SQLITE_INTEGER || sqlite3_column_int64(st, 0) < 0) {
            e = vt_set_error(VT_ERR_FORMAT, "run store %s: malformed checkpoint step", s->db_path);
            break;
        }
        if (len == cap) {
            size_t nc = cap ? 2 * cap : 16;
            uint64_t *g = realloc(v, nc * sizeof *g);
            if (!g) {
                e = vt_set_error(VT_ERR_NOMEM, "out of memory listing checkpoints");
                break;
            }
            v = g;
            cap = nc;
        }
        v[len++] = (uint64_t)sqlite3_column_int64(st, 0);
    }
    if (!e && rc != SQLITE_DONE) e = vti_store_db_fail(s, rc, "listing checkpoints");
    vti_store_stmt_done(st);
    if (e) {
        free(v);
        return e;
    }
    *steps = v;
    *n = len;
    return VT_OK;
}

/* ------------------------------------------------------------------ schema */

static const char *const SCHEMA_SQL =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value BLOB);"
    "CREATE TABLE steps(step INTEGER PRIMARY KEY, loss_bits INTEGER NOT NULL, has_state INTEGER NOT NULL,"
    " state_hash BLOB NOT NULL, log_hash BLOB NOT NULL, leaf BLOB NOT NULL, log_entries INTEGER NOT NULL,"
    " log BLOB NOT NULL);"
    "CREATE TABLE checkpoints(step INTEGER PRIMARY KEY, file_hash BLOB NOT NULL, n_values INTEGER NOT NULL);";

static vt_err prepare(vt_store *s, const char *sql, sqlite3_stmt **st)
{
    int rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
    if (rc != SQLITE_OK) {
        *st = NULL;
        int prim = rc & 0xff;
        if (prim == SQLITE_ERROR) /* no such table / column: someone else's database */
            VT_RETURN_ERROR(VT_ERR_FORMAT, "not a run store: %s (%s)", s->db_path, sqlite3_errmsg(s->db));
        return vti_store_db_fail(s, rc, "preparing a statement");
    }
    return VT_OK;
}

static vt_err prepare_all(vt_store *s)
{
    VT_FORWARD_IF_ERROR(prepare(s, "BEGIN IMMEDIATE", &s->begin));
    VT_FORWARD_IF_ERROR(prepare(s, "COMMIT", &s->commit));
    VT_FORWARD_IF_ERROR(prepare(s, "ROLLBACK", &s->rollback));
    VT_FORWARD_IF_ERROR(prepare(s, "SELECT value FROM meta WHERE key = ?1", &s->meta_get));
    VT_FORWARD_IF_ERROR(prepare(s, "SELECT MIN(step), MAX(step) FROM steps", &s->minmax));
    VT_FORWARD_IF_ERROR(prepare(s,
                                "INSERT INTO steps(step, loss_bits, has_state, state_hash, log_hash, leaf,"
                                " log_entries, log) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                                &s->put_step));
    VT_FORWARD_IF_ERROR(prepare(s,
                                "SELECT loss_bits, has_state, state_hash, log_hash, leaf, log_entries"
                                " FROM steps WHERE step = ?1",
                                &s->get_step));
    /* length() of a blob does not load it: the size is checked before the bytes are read. */
    VT_FORWARD_IF_ERROR(prepare(s,
                                "SELECT typeof(log), length(log),"
                                " CASE WHEN typeof(log) = 'blob' AND length(log) <= ?2 THEN log END"
                                " FROM steps WHERE step = ?1",
                                &s->get_log));
    VT_FORWARD_IF_ERROR(prepare(s, "DELETE FROM steps WHERE step > ?1", &s->del_steps));
    VT_FORWARD_IF_ERROR(prepare(s, "INSERT OR REPLACE INTO checkpoints(step, file_hash, n_values) VALUES(?1, ?2, ?3)",
                                &s->put_ckpt));
    VT_FORWARD_IF_ERROR(prepare(s, "SELECT file_hash, n_values FROM checkpoints WHERE step = ?1", &s->get_ckpt));
    VT_FORWARD_IF_ERROR(prepare(s, "SELECT step FROM checkpoints ORDER BY step", &s->list_ckpt));
    VT_FORWARD_IF_ERROR(prepare(s, "SELECT step FROM checkpoints WHERE step > ?1 ORDER BY step", &s->ckpts_after));
    VT_FORWARD_IF_ERROR(prepare(s, "DELETE FROM checkpoints WHERE step > ?1", &s->del_ckpts));
    return VT_OK;
}

/* Settings for every connection: hostile files must not be able to run code of theirs. */
static vt_err configure(vt_store *s)
{
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, (int *)NULL);
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, (int *)NULL);
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, (int *)NULL);
    /* Extra b-tree sanity checks while reading pages of a possibly corrupt file. */
    int rc = sqlite3_exec(s->db, "PRAGMA cell_size_check = ON", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return vti_store_db_fail(s, rc, "configuring");
    return VT_OK;
}

/* Writable connections: WAL, fsync on every commit. */
static vt_err set_wal(vt_store *s)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        return vti_store_db_fail(s, rc, "switching to WAL mode");
    }
    const unsigned char *mode = sqlite3_column_text(st, 0);
    int is_wal = mode && strcmp((const char *)mode, "wal") == 0;
    sqlite3_finalize(st);
    if (!is_wal)
        VT_RETURN_ERROR(VT_ERR_DB, "run store %s: cannot switch to WAL mode (another process holds it?)",
                        s->db_path);
    rc = sqlite3_exec(s->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return vti_store_db_fail(s, rc, "setting synchronous = NORMAL");
    return VT_OK;
}

/* Only our three tables (and SQLite's automatic index of meta's primary key). */
static vt_err check_schema(vt_store *s)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT type, name FROM sqlite_master", -1, &st, NULL);
    if (rc != SQLITE_OK) return vti_store_db_fail(s, rc, "reading the schema");
    int have_meta = 0, have_steps = 0, have_ckpt = 0;
    vt_err e = VT_OK;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        if (!type || !name) {
            e = vt_set_error(VT_ERR_FORMAT, "not a run store: %s has a malformed schema", s->db_path);
            break;
        }
        if (strcmp(type, "table") == 0 && strcmp(name, "meta") == 0) {
            have_meta = 1;
        } else if (strcmp(type, "table") == 0 && strcmp(name, "steps") == 0) {
            have_steps = 1;
        } else if (strcmp(type, "table") == 0 && strcmp(name, "checkpoints") == 0) {
            have_ckpt = 1;
        } else if (strcmp(type, "index") == 0 && strncmp(name, "sqlite_autoindex_", 17) == 0) {
            /* implicit index of a PRIMARY KEY / UNIQUE constraint */
        } else {
            e = vt_set_error(VT_ERR_FORMAT, "not a run store: %s has an unexpected %.32s '%.64s'", s->db_path,
                             type, name);
            break;
        }
    }
    sqlite3_finalize(st);
    if (e) return e;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) return db_fail_path(s->db, s->db_path, rc, "reading the schema");
    if (!have_meta || !have_steps || !have_ckpt)
        VT_RETURN_ERROR(VT_ERR_FORMAT, "not a run store: %s lacks the %s table", s->db_path,
                        !have_meta ? "meta" : !have_steps ? "steps" : "checkpoints");
    return VT_OK;
}

static vt_err check_version(vt_store *s)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &st, NULL);
    if (rc != SQLITE_OK) return vti_store_db_fail(s, rc, "reading the schema version");
    rc = sqlite3_step(st);
    vt_err e = VT_OK;
    if (rc == SQLITE_DONE) {
        e = vt_set_error(VT_ERR_FORMAT, "not a run store: %s has no schema_version", s->db_path);
    } else if (rc != SQLITE_ROW) {
        e = vti_store_db_fail(s, rc, "reading the schema version");
    } else if (sqlite3_column_type(st, 0) != SQLITE_INTEGER) {
        e = vt_set_error(VT_ERR_FORMAT, "not a run store: %s: schema_version is not an integer", s->db_path);
    } else {
        sqlite3_int64 v = sqlite3_column_int64(st, 0);
        if (v != VT_STORE_SCHEMA_VERSION)
            e = vt_set_error(VT_ERR_FORMAT, "run store %s: schema version %lld not supported (this build reads %d)",
                             s->db_path, (long long)v, VT_STORE_SCHEMA_VERSION);
    }
    sqlite3_finalize(st);
    return e;
}

/* Read a BLOB from meta (malloc'd, plus a terminating NUL not counted in len). */
static vt_err meta_blob(vt_store *s, const char *key, uint8_t **out, size_t *len)
{
    sqlite3_stmt *st = s->meta_get;
    int rc = sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (rc != SQLITE_OK) {
        vti_store_stmt_done(st);
        return vti_store_db_fail(s, rc, "binding");
    }
    rc = sqlite3_step(st);
    vt_err e = VT_OK;
    if (rc == SQLITE_DONE) {
        e = vt_set_error(VT_ERR_FORMAT, "run store %s: no %s in meta", s->db_path, key);
    } else if (rc != SQLITE_ROW) {
        e = vti_store_db_fail(s, rc, "reading meta");
    } else if (sqlite3_column_type(st, 0) != SQLITE_BLOB) {
        e = vt_set_error(VT_ERR_FORMAT, "run store %s: meta %s is not a blob", s->db_path, key);
    } else {
        const void *p = sqlite3_column_blob(st, 0);
        int n = sqlite3_column_bytes(st, 0);
        uint8_t *b = malloc((size_t)n + 1);
        if (!b || (n > 0 && !p)) {
            free(b);
            e = vt_set_error(VT_ERR_NOMEM, "run store %s: out of memory reading %s", s->db_path, key);
        } else {
            if (n > 0) memcpy(b, p, (size_t)n);
            b[n] = 0;
            *out = b;
            *len = (size_t)n;
        }
    }
    vti_store_stmt_done(st);
    return e;
}

static vt_err read_manifest(vt_store *s, char **manifest, size_t *len, uint8_t hash[VT_HASH_LEN])
{
    uint8_t *m = NULL, *h = NULL;
    size_t mlen = 0, hlen = 0;
    /* its length first (SQLite reads a blob's length without its bytes): a hostile store's 100 MB
     * manifest is refused before it is read (VT_JSON_MAX_BYTES, the manifest parser's own cap) */
    sqlite3_stmt *ls = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT length(value) FROM meta WHERE key = 'manifest'", -1, &ls, NULL);
    sqlite3_int64 ml = rc == SQLITE_OK && sqlite3_step(ls) == SQLITE_ROW ? sqlite3_column_int64(ls, 0) : 0;
    sqlite3_finalize(ls);
    if (ml > (sqlite3_int64)VT_JSON_MAX_BYTES)
        return vt_set_error(VT_ERR_LIMIT, "run store %s: a manifest of %lld bytes, over the %u-byte limit", s->db_path,
                            (long long)ml, VT_JSON_MAX_BYTES);
    vt_err e = meta_blob(s, "manifest", &m, &mlen);
    if (!e) e = meta_blob(s, "manifest_hash", &h, &hlen);
    if (!e && hlen != VT_HASH_LEN)
        e = vt_set_error(VT_ERR_FORMAT, "run store %s: manifest_hash is %zu bytes, not %d", s->db_path, hlen,
                         VT_HASH_LEN);
    uint8_t calc[VT_HASH_LEN];
    if (!e) e = vt_sha256(m, mlen, calc);
    if (!e && memcmp(calc, h, VT_HASH_LEN) != 0)
        e = vt_set_error(VT_ERR_MISMATCH, "run store %s: the manifest does not match its recorded hash", s->db_path);
    if (!e) {
        if (hash) memcpy(hash, h, VT_HASH_LEN);
        if (manifest) {
            *manifest = (char *)m;
            m = NULL;
        }
        if (len) *len = mlen;
    }
    free(m);
    free(h);
    return e;
}

static vt_store *store_alloc(const char *run_dir, int readonly)
{
    vt_store *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->readonly = readonly;
    s->lock_fd = -1;
    s->run_dir = vti_str_printf("%s", run_dir);
    s->db_path = vti_str_printf("%s/run.db", run_dir);
    if (!s->run_dir || !s->db_path) {
        free(s->run_dir);
        free(s->db_path);
        free(s);
        return NULL;
    }
    return s;
}

static void store_free(vt_store *s)
{
    sqlite3_stmt *all[] = {s->begin,   s->commit,  s->rollback, s->meta_get,  s->minmax,
                           s->put_step, s->get_step, s->get_log, s->del_steps, s->put_ckpt,
                           s->get_ckpt, s->list_ckpt, s->ckpts_after, s->del_ckpts};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sqlite3_finalize(all[i]);
    if (s->db) sqlite3_close_v2(s->db);
    if (s->lock_fd >= 0) close(s->lock_fd); /* the writer lock goes last, after run.db is closed */
    free(s->run_dir);
    free(s->db_path);
    free(s);
}

/* ------------------------------------------------------------------ the writer lock */

#define LOCK_NAME "run.lock"
#define DB_NEW "run.db.new"

/* RUN_DIR/run.lock: flock(LOCK_EX | LOCK_NB), then our PID written into it. A second writer is
 * refused at once, naming the holder; the lock goes with the process (kill -9 included). */
static vt_err lock_run_dir(vt_store *s)
{
    char *path = vti_str_printf("%s/" LOCK_NAME, s->run_dir);
    VT_RETURN_ERROR_IF(!path, VT_ERR_NOMEM, "out of memory locking %s", s->run_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    vt_err e = VT_OK;
    if (fd < 0) {
        e = vt_set_error(VT_ERR_IO, "cannot open the lock file %s: %s", path, strerror(errno));
    } else if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        char holder[24] = "";
        if (err == EWOULDBLOCK) {
            ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
            size_t k = 0;
            while (n > 0 && k < (size_t)n && holder[k] >= '0' && holder[k] <= '9') k++;
            holder[k] = 0;
            e = vt_set_error(VT_ERR_IO,
                             "run directory %s is in use by another trainer (pid %s, which holds %s): wait for it "
                             "to end (or stop it), then continue the run with --resume",
                             s->run_dir, *holder ? holder : "not yet written", path);
        } else {
            e = vt_set_error(VT_ERR_IO, "cannot lock %s: %s", path, strerror(err));
        }
    } else {
        char pid[24];
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != (ssize_t)n)
            e = vt_set_error(VT_ERR_IO, "cannot write the lock file %s: %s", path, strerror(errno));
    }
    free(path);
    if (e) {
        if (fd >= 0) close(fd);
        return e;
    }
    s->lock_fd = fd;
    return VT_OK;
}

/* The temporaries that killed writers left (a writer holds the lock, so none is live). */
static void remove_stale_temps(vt_store *s)
{
    DIR *d = opendir(s->run_dir);
    if (d) {
        struct dirent *ent;
        while ((ent = readdir(d)) != NULL) {
            if (strncmp(ent->d_name, "commitment.vtc.tmp", 18) != 0) continue;
            char *p = vti_str_printf("%s/%s", s->run_dir, ent->d_name);
            if (p) unlink(p);
            free(p);
        }
        closedir(d);
    }
    vti_ckpt_remove_temps(s);
}

/* ------------------------------------------------------------------ create / open / close */

static int dir_empty(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *ent;
    int empty = 1;
    while (empty && (ent = readdir(d)) != NULL)
        if (strcmp(ent->d_name, ".") != 0 && strcmp(ent->d_name, "..") != 0) empty = 0;
    closedir(d);
    return empty;
}

/* A directory a run may be created in: empty, or holding only what an interrupted creation
 * leaves (run.lock, an empty checkpoints/, run.db.new, run.db.new-journal). */
static vt_err dir_is_fresh(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) VT_RETURN_ERROR(VT_ERR_IO, "cannot create run directory %s: it exists and cannot be read (%s)", dir,
                            strerror(errno));
    struct dirent *ent;
    int has_run = 0;
    char other[256] = "";
    while ((ent = readdir(d)) != NULL) {
        const char *n = ent->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, LOCK_NAME) || !strcmp(n, DB_NEW) ||
            !strcmp(n, DB_NEW "-journal"))
            continue;
        if (!strcmp(n, "checkpoints")) {
            char *ck = vti_ckpt_dir(dir);
            int empty = ck && dir_empty(ck);
            free(ck);
            if (empty) continue;
        }
        if (!strcmp(n, "run.db")) has_run = 1;
        if (!*other) snprintf(other, sizeof other, "%s", n);
    }
    closedir(d);
    VT_RETURN_ERROR_IF(has_run, VT_ERR_ARG,
                       "cannot create run directory %s: it holds a run (run.db): continue that run with "
                       "`trainer train --resume` (same recipe), or choose another directory",
                       dir);
    VT_RETURN_ERROR_IF(*other, VT_ERR_ARG, "cannot create run directory %s: it exists and is not empty (%s)", dir,
                       other);
    return VT_OK;
}

/* Opens run.db of s, which exists: schema and version checked, WAL mode for a writer, the
 * statements prepared, the manifest checked against its hash. */
static vt_err open_db(vt_store *s)
{
    struct stat sb;
    if (stat(s->db_path, &sb) != 0)
        VT_RETURN_ERROR(VT_ERR_IO, "cannot open run store %s: %s", s->db_path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        VT_RETURN_ERROR(VT_ERR_FORMAT, "not a run store: %s is not a regular file", s->db_path);
    int rc = sqlite3_open_v2(s->db_path, &s->db, s->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE, NULL);
    if (rc != SQLITE_OK) return vti_store_db_fail(s, rc, "opening");
    VT_FORWARD_IF_ERROR(configure(s));
    if (s->readonly && sqlite3_exec(s->db, "PRAGMA query_only = ON", NULL, NULL, NULL) != SQLITE_OK)
        return vti_store_db_fail(s, sqlite3_errcode(s->db), "setting query_only");
    VT_FORWARD_IF_ERROR(check_schema(s));
    VT_FORWARD_IF_ERROR(check_version(s));
    if (!s->readonly) VT_FORWARD_IF_ERROR(set_wal(s));
    VT_FORWARD_IF_ERROR(prepare_all(s));
    return read_manifest(s, NULL, NULL, NULL);
}

/* run.db.new with the schema and the manifest, committed in one transaction (rollback journal,
 * synchronous FULL: durable at COMMIT), closed. */
static vt_err write_new_db(vt_store *s, const char *path, const char *manifest, size_t manifest_len)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) {
        vt_err e = db_fail_path(db, path, rc, "creating");
        sqlite3_close(db);
        return e;
    }
    s->db = db;
    vt_err e = configure(s);
    s->db = NULL;
    uint8_t mhash[VT_HASH_LEN];
    if (!e) e = vt_sha256(manifest ? manifest : "", manifest_len, mhash);
    if (e) {
        sqlite3_close(db);
        return e;
    }
    rc = sqlite3_exec(db, "PRAGMA journal_mode = DELETE; PRAGMA synchronous = FULL", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, SCHEMA_SQL, NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        e = db_fail_path(db, path, rc, "creating the schema");
        sqlite3_close(db);
        return e;
    }
    sqlite3_stmt *ins = NULL;
    rc = sqlite3_prepare_v2(db, "INSERT INTO meta(key, value) VALUES(?1, ?2)", -1, &ins, NULL);
    if (rc == SQLITE_OK) {
        static const uint8_t empty = 0;
        struct {
            const char *key;
            int is_int;
            const void *p;
            int n;
        } rows[3] = {
            {"schema_version", 1, NULL, VT_STORE_SCHEMA_VERSION},
            {"manifest", 0, manifest_len ? (const void *)manifest : (const void *)&empty, (int)manifest_len},
            {"manifest_hash", 0, mhash, VT_HASH_LEN},
        };
        for (int i = 0; i < 3 && rc == SQLITE_OK; i++) {
            rc = sqlite3_bind_text(ins, 1, rows[i].key, -1, SQLITE_STATIC);
            if (rc == SQLITE_OK)
                rc = rows[i].is_int ? sqlite3_bind_int64(ins, 2, rows[i].n)
                                    : sqlite3_bind_blob(ins, 2, rows[i].p, rows[i].n, SQLITE_STATIC);
            if (rc == SQLITE_OK) rc = sqlite3_step(ins);
            if (rc == SQLITE_DONE) rc = SQLITE_OK;
            sqlite3_reset(ins);
        }
    }
    sqlite3_finalize(ins);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        e = db_fail_path(db, path, rc, "writing the manifest");
        sqlite3_close(db);
        return e;
    }
    rc = sqlite3_close(db);
    if (rc != SQLITE_OK) return db_fail_path(NULL, path, rc, "closing");
    return VT_OK;
}

vt_err vt_store_create(const char *run_dir, const char *manifest, size_t manifest_len, vt_store **out)
{
    VT_RETURN_ERROR_IF(!run_dir || !*run_dir || !out || (!manifest && manifest_len), VT_ERR_ARG,
                       "vt_store_create: invalid argument");
    VT_RETURN_ERROR_IF(manifest_len > (size_t)INT_MAX, VT_ERR_LIMIT, "vt_store_create: manifest too large");
    *out = NULL;
    int made_dir = 0;
    if (mkdir(run_dir, 0777) == 0) {
        made_dir = 1;
    } else if (errno == EEXIST) {
        struct stat sb;
        VT_RETURN_ERROR_IF(stat(run_dir, &sb) != 0 || !S_ISDIR(sb.st_mode), VT_ERR_IO,
                           "cannot create run directory %s: it exists and is not a directory", run_dir);
        VT_FORWARD_IF_ERROR(dir_is_fresh(run_dir));
    } else {
        VT_RETURN_ERROR(VT_ERR_IO, "cannot create run directory %s: %s", run_dir, strerror(errno));
    }

    vt_store *s = store_alloc(run_dir, 0);
    char *ckdir = vti_ckpt_dir(run_dir);
    char *newdb = vti_str_printf("%s/" DB_NEW, run_dir), *newj = vti_str_printf("%s/" DB_NEW "-journal", run_dir);
    char *lockp = vti_str_printf("%s/" LOCK_NAME, run_dir);
    char *db = vti_str_printf("%s/run.db", run_dir), *wal = vti_str_printf("%s/run.db-wal", run_dir),
         *shm = vti_str_printf("%s/run.db-shm", run_dir);
    vt_err e = VT_OK;
    int locked = 0, renamed = 0;
    if (!s || !ckdir || !newdb || !newj || !lockp || !db || !wal || !shm) {
        e = vt_set_error(VT_ERR_NOMEM, "out of memory creating run store %s", run_dir);
        goto fail;
    }
    if ((e = lock_run_dir(s))) goto fail;
    locked = 1;
    /* again under the lock: a creator that held it before us may have finished meanwhile */
    if (!made_dir && (e = dir_is_fresh(run_dir))) goto fail;
    vti_fault(NULL, "create.locked");
    unlink(newdb); /* what an interrupted creation left */
    unlink(newj);
    if (mkdir(ckdir, 0777) != 0 && errno != EEXIST) {
        e = vt_set_error(VT_ERR_IO, "cannot create %s: %s", ckdir, strerror(errno));
        goto fail;
    }
    if ((e = write_new_db(s, newdb, manifest, manifest_len))) goto fail;
    vti_fault(NULL, "create.db-new");
    if (rename(newdb, db) != 0) {
        e = vt_set_error(VT_ERR_IO, "cannot rename %s to %s: %s", newdb, db, strerror(errno));
        goto fail;
    }
    renamed = 1;
    vti_fault(NULL, "create.renamed");
    if ((e = vti_fsync_dir(run_dir))) goto fail;
    if (made_dir) {
        char *parent = vti_dir_of(run_dir);
        e = parent ? vti_fsync_dir(parent) : vt_set_error(VT_ERR_NOMEM, "out of memory");
        free(parent);
        if (e) goto fail;
    }
    if ((e = open_db(s))) goto fail;
    *out = s;
    s = NULL;
fail:
    if (s) {
        int lock_fd = s->lock_fd; /* held until everything this creation wrote is gone */
        s->lock_fd = -1;
        store_free(s);
        if (locked) {
            if (renamed) {
                unlink(db);
                unlink(wal);
                unlink(shm);
            }
            unlink(newdb);
            unlink(newj);
            rmdir(ckdir);
            unlink(lockp);
        }
        if (lock_fd >= 0) close(lock_fd);
        if (made_dir) rmdir(run_dir);
    }
    free(ckdir);
    free(newdb);
    free(newj);
    free(lockp);
    free(db);
    free(wal);
    free(shm);
    return e;
}

vt_err vt_store_open(const char *run_dir, int readonly, vt_store **out)
{
    VT_RETURN_ERROR_IF(!run_dir || !*run_dir || !out, VT_ERR_ARG, "vt_store_open: invalid argument");
    *out = NULL;
    vt_store *s = store_alloc(run_dir, readonly ? 1 : 0);
    VT_RETURN_ERROR_IF(!s, VT_ERR_NOMEM, "out of memory opening run store %s", run_dir);
    vt_err e = VT_OK;
    if (!s->readonly) {
        /* a writer: the lock first (not in a directory without a run store: no lock file there) */
        struct stat sb;
        if (stat(s->db_path, &sb) != 0)
            e = vt_set_error(VT_ERR_IO, "cannot open run store %s: %s", s->db_path, strerror(errno));
        if (!e) e = lock_run_dir(s);
        if (!e) remove_stale_temps(s);
    }
    if (!e) e = open_db(s);
    if (e) {
        store_free(s);
        return e;
    }
    *out = s;
    return VT_OK;
}

/* The PIDs, other than ours, that hold POSIX locks on run.db or run.db-shm (readers of the run:
 * SQLite locks both), from /proc/locks; "" where it cannot tell. */
static void lock_holders(const vt_store *s, char *buf, size_t cap)
{
    buf[0] = 0;
    struct stat sb[2];
    int have[2];
    char *shm = vti_str_printf("%s-shm", s->db_path);
    have[0] = stat(s->db_path, &sb[0]) == 0;
    have[1] = shm && stat(shm, &sb[1]) == 0;
    free(shm);
    FILE *f = fopen("/proc/locks", "r");
    if (!f) return;
    char line[256];
    long pids[8];
    int np = 0;
    while (np < 8 && fgets(line, sizeof line, f)) {
        char kind[16], dev[64];
        long pid = 0;
        unsigned maj = 0, min = 0;
        unsigned long long ino = 0;
        if (sscanf(line, "%*[^:]: %15s %*s %*s %ld %63s", kind, &pid, dev) != 3 || strcmp(kind, "POSIX") != 0 ||
            sscanf(dev, "%x:%x:%llu", &maj, &min, &ino) != 3 || pid <= 0 || pid == (long)getpid())
            continue;
        int match = 0;
        for (int i = 0; i < 2; i++)
            if (have[i] && ino == (unsigned long long)sb[i].st_ino && maj == major(sb[i].st_dev) &&
                min == minor(sb[i].st_dev))
                match = 1;
        int seen = 0;
        for (int i = 0; i < np; i++) seen |= pids[i] == pid;
        if (match && !seen) pids[np++] = pid;
    }
    fclose(f);
    size_t len = 0;
    for (int i = 0; i < np && len + 24 < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%ld", i ? ", " : "", pids[i]);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

vt_err vt_store_finish(vt_store *s, int wait_ms)
{
    VT_RETURN_ERROR_IF(!s || wait_ms < 0, VT_ERR_ARG, "vt_store_finish: invalid argument");
    VT_RETURN_ERROR_IF(s->readonly, VT_ERR_ARG, "run store %s is open read-only", s->db_path);
    double deadline = now_s() + wait_ms / 1000.0;
    int announced = 0;
    vt_err e = VT_OK;
    for (;;) {
        int nlog = -1, nck = -1;
        sqlite3_busy_timeout(s->db, 100);
        int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &nlog, &nck);
        if (rc == SQLITE_OK) break; /* every page in run.db, run.db-wal empty */
        int prim = rc & 0xff;
        if (prim != SQLITE_BUSY && prim != SQLITE_LOCKED) {
            e = vti_store_db_fail(s, rc, "folding run.db-wal into run.db");
            break;
        }
        /* Busy. Every frame copied: run.db holds everything, and only a reader of the latest
         * snapshot keeps run.db-wal from being reset (its frames are all in run.db too). */
        if (nlog >= 0 && nck == nlog) break;
        char who[128];
        if (now_s() >= deadline) {
            lock_holders(s, who, sizeof who);
            e = vt_set_error(VT_ERR_IO,
                             "run store %s is not self-contained: %d of the %d pages in run.db-wal could not be "
                             "copied into run.db because another process (a reader of the run: pid %s) kept an "
                             "older snapshot open for %d s; the run is not committed, but every step is stored: "
                             "once that reader lets go, `trainer train --resume` commits it",
                             s->db_path, nlog - (nck > 0 ? nck : 0), nlog, *who ? who : "unknown", wait_ms / 1000);
            break;
        }
        if (!announced) {
            lock_holders(s, who, sizeof who);
            fprintf(stderr,
                    "run store %s: waiting up to %d s for a reader of an older snapshot (pid %s) to let go, "
                    "to copy run.db-wal into run.db\n",
                    s->db_path, wait_ms / 1000, *who ? who : "unknown");
            announced = 1;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!e) {
        /* Back to rollback-journal mode (one file, no -wal / -shm for a read-only opener): only when no
         * other connection has run.db open; else it stays in WAL mode, complete. */
        sqlite3_busy_timeout(s->db, 0);
        sqlite3_exec(s->db, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL);
        vti_fault(NULL, "finish.folded");
    }
    sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
    return e;
}

void vt_store_close(vt_store *s)
{
    if (!s) return;
    if (s->db && !s->readonly) {
        /* Best effort, never waiting for readers (vt_store_finish is the checked, waiting one):
         * fold the WAL into run.db and leave the file in rollback-journal mode. */
        sqlite3_busy_timeout(s->db, 0);
        if (sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) == SQLITE_OK)
            sqlite3_exec(s->db, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL);
    }
    store_free(s);
}

vt_err vt_store_put_file(const char *run_dir, const char *name, const uint8_t *data, size_t len)
{
    VT_RETURN_ERROR_IF(!run_dir || !name || strchr(name, '/') || (!data && len), VT_ERR_ARG, "vt_store_put_file: bad argument");
    char *path = vti_str_printf("%s/%s", run_dir, name);
    VT_RETURN_ERROR_IF(!path, VT_ERR_NOMEM, "out of memory");
    vt_err e = vti_write_durable_at(path, data, len, "file");
    free(path);
    return e;
}

vt_err vt_store_manifest(vt_store *s, char **manifest, size_t *len, uint8_t hash[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(!s, VT_ERR_ARG, "vt_store_manifest: invalid argument");
    return read_manifest(s, manifest, len, hash);
}

/* ------------------------------------------------------------------ steps */

/* count = last step + 1; checks that the steps start at 0. Caller resets s->minmax. */
static vt_err step_count(vt_store *s, uint64_t *count)
{
    int rc = sqlite3_step(s->minmax);
    vt_err e = VT_OK;
    if (rc != SQLITE_ROW) {
        e = vti_store_db_fail(s, rc, "counting steps");
    } else if (sqlite3_column_type(s->minmax, 1) == SQLITE_NULL) {
        *count = 0;
    } else if (sqlite3_column_type(s->minmax, 0) != SQLITE_INTEGER ||
               sqlite3_column_type(s->minmax, 1) != SQLITE_INTEGER) {
        e = vt_set_error(VT_ERR_FORMAT, "run store %s: malformed step numbers", s->db_path);
    } else {
        sqlite3_int64 lo = sqlite3_column_int64(s->minmax, 0), hi = sqlite3_column_int64(s->minmax, 1);
        if (lo != 0)
            e = vt_set_error(VT_ERR_FORMAT, "run store %s: the first step is %lld, not 0", s->db_path, (long long)lo);
        else if (hi < 0 || hi == INT64_MAX)
            e = vt_set_error(VT_ERR_FORMAT, "run store %s: step %lld out of range", s->db_path, (long long)hi);
        else
            *count = (uint64_t)hi + 1;
    }
    vti_store_stmt_done(s->minmax);
    return e;
}

vt_err vt_store_step_count(vt_store *s, uint64_t *count)
{
    VT_RETURN_ERROR_IF(!s || !count, VT_ERR_ARG, "vt_store_step_count: invalid argument");
    return step_count(s, count);
}

vt_err vt_store_put_step(vt_store *s, const vt_step_rec *r, const uint8_t *log_blob, size_t log_len)
{
    VT_RETURN_ERROR_IF(!s || !r || (!log_blob && log_len), VT_ERR_ARG, "vt_store_put_step: invalid argument");
    VT_RETURN_ERROR_IF(s->readonly, VT_ERR_ARG, "run store %s is open read-only", s->db_path);
    VT_RETURN_ERROR_IF(r->step >= (uint64_t)INT64_MAX, VT_ERR_ARG, "step %llu out of range",
                       (unsigned long long)r->step);
    VT_RETURN_ERROR_IF(r->has_state != 0 && r->has_state != 1, VT_ERR_ARG, "step %llu: has_state must be 0 or 1",
                       (unsigned long long)r->step);
    VT_RETURN_ERROR_IF(r->log_entries > (uint64_t)INT64_MAX, VT_ERR_ARG, "step %llu: log_entries out of range",
                       (unsigned long long)r->step);
    VT_RETURN_ERROR_IF(log_len > VT_STORE_MAX_LOG_BYTES, VT_ERR_LIMIT,
                       "step %llu: log blob of %zu bytes exceeds the limit of %zu", (unsigned long long)r->step,
                       log_len, VT_STORE_MAX_LOG_BYTES);

    VT_FORWARD_IF_ERROR(vti_store_exec(s, s->begin, "beginning a transaction"));
    uint64_t count = 0;
    vt_err e = step_count(s, &count);
    if (!e && r->step != count)
        e = vt_set_error(VT_ERR_ARG, "run store %s: step %llu out of order: the next step is %llu", s->db_path,
                         (unsigned long long)r->step, (unsigned long long)count);
    if (!e) {
        static const uint8_t empty = 0;
        sqlite3_stmt *st = s->put_step;
        int rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)r->step);
        if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 2, (sqlite3_int64)r->loss_bits);
        if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 3, r->has_state);
        if (rc == SQLITE_OK) rc = sqlite3_bind_blob(st, 4, r->state_hash, VT_HASH_LEN, SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_bind_blob(st, 5, r->log_hash, VT_HASH_LEN, SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_bind_blob(st, 6, r->leaf, VT_HASH_LEN, SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 7, (sqlite3_int64)r->log_entries);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_blob(st, 8, log_len ? (const void *)log_blob : (const void *)&empty, (int)log_len,
                                   SQLITE_STATIC);
        if (rc != SQLITE_OK) {
            vti_store_stmt_done(st);
            e = vti_store_db_fail(s, rc, "binding a step");
        } else {
            e = vti_store_exec(s, st, "writing a step");
        }
    }
    if (!e) e = vti_store_exec(s, s->commit, "committing a step");
    if (e) rollback(s);
    if (!e) vti_fault(NULL, "step.stored");
    return e;
}

vt_err vt_store_get_step(vt_store *s, uint64_t step, vt_step_rec *r)
{
    VT_RETURN_ERROR_IF(!s || !r, VT_ERR_ARG, "vt_store_get_step: invalid argument");
    memset(r, 0, sizeof *r);
    VT_RETURN_ERROR_IF(step >= (uint64_t)INT64_MAX, VT_ERR_ARG, "step %llu is not in run store %s",
                       (unsigned long long)step, s->db_path);
    sqlite3_stmt *st = s->get_step;
    VT_FORWARD_IF_ERROR(vti_store_bind_step(s, st, step));
    int rc = sqlite3_step(st);
    vt_err e = VT_OK;
    if (rc == SQLITE_DONE) {
        vti_store_stmt_done(st);
        uint64_t count = 0;
        VT_FORWARD_IF_ERROR(step_count(s, &count));
        if (step < count)
            VT_RETURN_ERROR(VT_ERR_FORMAT, "run store %s: step %llu is missing (the store has %llu steps)",
                            s->db_path, (unsigned long long)step, (unsigned long long)count);
        VT_RETURN_ERROR(VT_ERR_ARG, "step %llu is not in run store %s (%llu steps)", (unsigned long long)step,
                        s->db_path, (unsigned long long)count);
    }
    if (rc != SQLITE_ROW) {
        e = vti_store_db_fail(s, rc, "reading a step");
    } else {
        uint64_t loss = 0, has = 0, entries = 0;
        if (!e) e = vti_store_col_uint(s, st, 0, UINT32_MAX, &loss, "loss_bits", step);
        if (!e) e = vti_store_col_uint(s, st, 1, 1, &has, "has_state", step);
        if (!e) e = vti_store_col_hash(s, st, 2, r->state_hash, "state_hash", "step", step);
        if (!e) e = vti_store_col_hash(s, st, 3, r->log_hash, "log_hash", "step", step);
        if (!e) e = vti_store_col_hash(s, st, 4, r->leaf, "leaf", "step", step);
        if (!e) e = vti_store_col_uint(s, st, 5, (uint64_t)INT64_MAX, &entries, "log_entries", step);
        if (!e) {
            r->step = step;
            r->loss_bits = (uint32_t)loss;
            r->has_state = (int)has;
            r->log_entries = entries;
        } else {
            memset(r, 0, sizeof *r);
        }
    }
    vti_store_stmt_done(st);
    return e;
}

vt_err vt_store_get_log(vt_store *s, uint64_t step, uint8_t **blob, size_t *len)
{
    VT_RETURN_ERROR_IF(!s || !blob || !len, VT_ERR_ARG, "vt_store_get_log: invalid argument");
    *blob = NULL;
    *len = 0;
    VT_RETURN_ERROR_IF(step >= (uint64_t)INT64_MAX, VT_ERR_ARG, "step %llu is not in run store %s",
                       (unsigned long long)step, s->db_path);
    sqlite3_stmt *st = s->get_log;
    int rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)step);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 2, (sqlite3_int64)VT_STORE_MAX_LOG_BYTES);
    if (rc != SQLITE_OK) {
        vti_store_stmt_done(st);
        return vti_store_db_fail(s, rc, "binding");
    }
    rc = sqlite3_step(st);
    vt_err e = VT_OK;
    if (rc == SQLITE_DONE) {
        e = vt_set_error(VT_ERR_ARG, "step %llu is not in run store %s", (unsigned long long)step, s->db_path);
    } else if (rc != SQLITE_ROW) {
        e = vti_store_db_fail(s, rc, "reading a step log");
    } else {
        const char *type = (const char *)sqlite3_column_text(st, 0);
        sqlite3_int64 n = sqlite3_column_int64(st, 1);
        if (!type || strcmp(type, "blob") != 0) {
            e = vt_set_error(VT_ERR_FORMAT, "run store %s: step %llu: log is not a blob", s->db_path,
                             (unsigned long long)step);
        } else if (n < 0 || (uint64_t)n > VT_STORE_MAX_LOG_BYTES) {
            e = vt_set_error(VT_ERR_LIMIT, "run store %s: step %llu: log blob of %lld bytes exceeds the limit",
                             s->db_path, (unsigned long long)step, (long long)n);
        } else if (sqlite3_column_type(st, 2) != SQLITE_BLOB && n > 0) {
            e = vt_set_error(VT_ERR_FORMAT, "run store %s: step %llu: log is not a blob", s->db_path,
                             (unsigned long long)step);
        } else {
            const void *p = sqlite3_column_blob(st, 2);
            if (sqlite3_column_bytes(st, 2) != (int)n || (n > 0 && !p)) {
                e = vt_set_error(VT_ERR_FORMAT, "run store %s: step %llu: log blob length changed", s->db_path,
                                 (unsigned long long)step);
            } else {
                uint8_t *b = malloc(n ? (size_t)n : 1);
                if (!b) {
                    e = vt_set_error(VT_ERR_NOMEM, "out of memory reading the log of step %llu",
                                     (unsigned long long)step);
                } else {
                    if (n) memcpy(b, p, (size_t)n);
                    *blob = b;
                    *len = (size_t)n;
                }
            }
        }
    }
    vti_store_stmt_done(st);
    return e;
}

vt_err vt_store_truncate(vt_store *s, uint64_t step)
{
    VT_RETURN_ERROR_IF(!s, VT_ERR_ARG, "vt_store_truncate: invalid argument");
    VT_RETURN_ERROR_IF(s->readonly, VT_ERR_ARG, "run store %s is open read-only", s->db_path);
    if (step >= (uint64_t)INT64_MAX) return VT_OK; /* no step can be above it */

    VT_FORWARD_IF_ERROR(vti_store_exec(s, s->begin, "beginning a transaction"));
    uint64_t *gone = NULL;
    size_t n_gone = 0;
    vt_err e = vti_store_bind_step(s, s->ckpts_after, step);
    if (!e) e = vti_store_steps_of(s, s->ckpts_after, &gone, &n_gone);
    if (!e) e = vti_store_bind_step(s, s->del_steps, step);
    if (!e) e = vti_store_exec(s, s->del_steps, "deleting steps");
    if (!e) e = vti_store_bind_step(s, s->del_ckpts, step);
    if (!e) e = vti_store_exec(s, s->del_ckpts, "deleting checkpoints");
    if (!e) e = vti_store_exec(s, s->commit, "committing a truncation");
    if (e) {
        rollback(s);
        free(gone);
        return e;
    }
    /* The records are gone; now the files, recorded or not (an orphan file left by a crash here
     * is harmless: nothing refers to it, and the next truncation or checkpoint of that step
     * removes or replaces it). */
    vti_fault(NULL, "truncate.recorded");
    e = vti_ckpt_remove_files(s, gone, n_gone, step);
    free(gone);
    return e;
}
