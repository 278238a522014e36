/* vt_store.c - the run directory: SQLite run store, checkpoint files, commitment file.
 *
 * run.db is an SQLite database in WAL mode with synchronous=NORMAL: a step is in the WAL
 * once vt_store_put_step has returned, so a kill -9 afterwards keeps it; a power cut may
 * lose the steps since the last WAL sync, which `trainer train --resume` recomputes from
 * the last checkpoint (checkpoint files themselves are fsynced before they are recorded).
 * A writable vt_store_close checkpoints the WAL into run.db (TRUNCATE) and switches the
 * file back to rollback-journal mode, so a finished run is the single file run.db: it
 * can be copied elsewhere and opened read-only without SQLite creating -wal / -shm
 * files next to it (a read-only open of a WAL-mode file would create them).  A run that
 * is still being written, or whose trainer was killed, also has run.db-wal; copy it
 * along with run.db (a read-only open then needs a writable directory for run.db-shm).
 *
 * Every value read back is treated as hostile: the schema is checked on open (only our
 * three tables, no views or triggers), every column is type- and length-checked, and
 * SQLite's "not a database" / "corrupt" results become VT_ERR_FORMAT naming the file.
 * Byte layouts of the checkpoint and commitment files: docs/format.md ("Other formats").
 */
#include "vt_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zstd.h>

#include "../common/vt_bytes.h"

/* Largest compressed step log accepted (put and get). The codec itself limits a decoded
 * payload to 256 MiB by default; a compressed container is never much larger. */
#define VT_STORE_MAX_LOG_BYTES ((size_t)512 << 20)
#define CKPT_HEADER_LEN 24
#define CKPT_VERSION 1
#define COMMITMENT_VERSION 1
#define BUSY_TIMEOUT_MS 10000

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define VT_HOST_LE 1
#else
#define VT_HOST_LE 0
#endif

struct vt_store {
    sqlite3 *db;
    int readonly;
    char *run_dir;
    char *db_path;
    sqlite3_stmt *begin, *commit, *rollback;
    sqlite3_stmt *meta_get;
    sqlite3_stmt *minmax;
    sqlite3_stmt *put_step, *get_step, *get_log, *del_steps;
    sqlite3_stmt *put_ckpt, *get_ckpt, *list_ckpt, *ckpts_after, *del_ckpts;
};

/* ------------------------------------------------------------------ helpers */

static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *p = malloc((size_t)n + 1);
    if (!p) return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

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

static vt_err db_fail(vt_store *s, int rc, const char *what)
{
    return db_fail_path(s->db, s->db_path, rc, what);
}

static void stmt_done(sqlite3_stmt *st)
{
    if (st) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
}

/* Run a statement that returns no rows. */
static vt_err exec_stmt(vt_store *s, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    stmt_done(st);
    if (rc != SQLITE_DONE) return db_fail(s, rc, what);
    return VT_OK;
}

static void rollback(vt_store *s)
{
    if (!sqlite3_get_autocommit(s->db)) {
        sqlite3_step(s->rollback);
        sqlite3_reset(s->rollback);
    }
}

/* An INTEGER column in [0, max]. */
static vt_err col_uint(vt_store *s, sqlite3_stmt *st, int col, uint64_t max, uint64_t *out,
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

/* A BLOB column of exactly 32 bytes. */
static vt_err col_hash(vt_store *s, sqlite3_stmt *st, int col, uint8_t out[VT_HASH_LEN], const char *field,
                       const char *table, uint64_t step)
{
    if (sqlite3_column_type(st, col) != SQLITE_BLOB || sqlite3_column_bytes(st, col) != VT_HASH_LEN)
        VT_RETURN_ERROR(VT_ERR_FORMAT, "run store %s: %s %llu: %s is not a %d-byte blob", s->db_path, table,
                        (unsigned long long)step, field, VT_HASH_LEN);
    const void *p = sqlite3_column_blob(st, col);
    if (!p) VT_RETURN_ERROR(VT_ERR_NOMEM, "run store %s: out of memory reading %s", s->db_path, field);
    memcpy(out, p, VT_HASH_LEN);
    return VT_OK;
}

/* fsync a directory so that a rename or a creation in it is durable. */
static vt_err fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) VT_RETURN_ERROR(VT_ERR_IO, "cannot open directory %s: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    /* Some file systems do not support fsync on directories; that is not an error. */
    if (rc != 0 && e != EINVAL && e != EROFS)
        VT_RETURN_ERROR(VT_ERR_IO, "cannot fsync directory %s: %s", dir, strerror(e));
    return VT_OK;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return str_printf(".");
    if (slash == path) return str_printf("/");
    return str_printf("%.*s", (int)(slash - path), path);
}

/* Write a whole file atomically: temp file in the same directory, fwrite, fflush, fsync,
 * rename over the target, fsync the directory. */
static vt_err write_atomic(const char *path, const uint8_t *data, size_t len)
{
    static atomic_ulong counter;
    unsigned long k = atomic_fetch_add(&counter, 1);
    char *tmp = str_printf("%s.tmp-%ld-%lu", path, (long)getpid(), k);
    char *dir = dir_of(path);
    vt_err e = VT_OK;
    if (!tmp || !dir) {
        e = vt_set_error(VT_ERR_NOMEM, "out of memory writing %s", path);
        goto done;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        e = vt_set_error(VT_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
        goto done;
    }
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        e = vt_set_error(VT_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        goto done;
    }
    int ok = (len == 0 || fwrite(data, 1, len, f) == len) && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int werr = errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        werr = errno;
    }
    if (!ok) {
        e = vt_set_error(VT_ERR_IO, "cannot write %s: %s", tmp, strerror(werr));
        unlink(tmp);
        goto done;
    }
    if (rename(tmp, path) != 0) {
        e = vt_set_error(VT_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        goto done;
    }
    e = fsync_dir(dir);
done:
    free(tmp);
    free(dir);
    return e;
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
        return db_fail(s, rc, "preparing a statement");
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
    if (rc != SQLITE_OK) return db_fail(s, rc, "configuring");
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
        return db_fail(s, rc, "switching to WAL mode");
    }
    const unsigned char *mode = sqlite3_column_text(st, 0);
    int is_wal = mode && strcmp((const char *)mode, "wal") == 0;
    sqlite3_finalize(st);
    if (!is_wal)
        VT_RETURN_ERROR(VT_ERR_DB, "run store %s: cannot switch to WAL mode (another process holds it?)",
                        s->db_path);
    rc = sqlite3_exec(s->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return db_fail(s, rc, "setting synchronous = NORMAL");
    return VT_OK;
}

/* Only our three tables (and SQLite's automatic index of meta's primary key). */
static vt_err check_schema(vt_store *s)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT type, name FROM sqlite_master", -1, &st, NULL);
    if (rc != SQLITE_OK) return db_fail(s, rc, "reading the schema");
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
    if (rc != SQLITE_OK) return db_fail(s, rc, "reading the schema version");
    rc = sqlite3_step(st);
    vt_err e = VT_OK;
    if (rc == SQLITE_DONE) {
        e = vt_set_error(VT_ERR_FORMAT, "not a run store: %s has no schema_version", s->db_path);
    } else if (rc != SQLITE_ROW) {
        e = db_fail(s, rc, "reading the schema version");
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
        stmt_done(st);
        return db_fail(s, rc, "binding");
    }
    rc = sqlite3_step(st);
    vt_err e = VT_OK;
    if (rc == SQLITE_DONE) {
        e = vt_set_error(VT_ERR_FORMAT, "run store %s: no %s in meta", s->db_path, key);
    } else if (rc != SQLITE_ROW) {
        e = db_fail(s, rc, "reading meta");
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
    stmt_done(st);
    return e;
}

static vt_err read_manifest(vt_store *s, char **manifest, size_t *len, uint8_t hash[VT_HASH_LEN])
{
    uint8_t *m = NULL, *h = NULL;
    size_t mlen = 0, hlen = 0;
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
    s->run_dir = str_printf("%s", run_dir);
    s->db_path = str_printf("%s/run.db", run_dir);
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
    free(s->run_dir);
    free(s->db_path);
    free(s);
}

/* ------------------------------------------------------------------ create / open / close */

static vt_err dir_is_empty(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) VT_RETURN_ERROR(VT_ERR_IO, "cannot create run directory %s: it exists and cannot be read (%s)", dir,
                            strerror(errno));
    struct dirent *ent;
    int empty = 1;
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") != 0 && strcmp(ent->d_name, "..") != 0) {
            empty = 0;
            break;
        }
    }
    closedir(d);
    VT_RETURN_ERROR_IF(!empty, VT_ERR_ARG, "cannot create run directory %s: it exists and is not empty", dir);
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
        VT_FORWARD_IF_ERROR(dir_is_empty(run_dir));
    } else {
        VT_RETURN_ERROR(VT_ERR_IO, "cannot create run directory %s: %s", run_dir, strerror(errno));
    }

    vt_store *s = store_alloc(run_dir, 0);
    char *ckdir = str_printf("%s/checkpoints", run_dir);
    vt_err e = VT_OK;
    int made_ckdir = 0;
    if (!s || !ckdir) {
        e = vt_set_error(VT_ERR_NOMEM, "out of memory creating run store %s", run_dir);
        goto fail;
    }
    if (mkdir(ckdir, 0777) != 0) {
        e = vt_set_error(VT_ERR_IO, "cannot create %s: %s", ckdir, strerror(errno));
        goto fail;
    }
    made_ckdir = 1;

    int rc = sqlite3_open_v2(s->db_path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) {
        e = db_fail(s, rc, "creating");
        goto fail;
    }
    if ((e = configure(s)) || (e = set_wal(s))) goto fail;

    uint8_t mhash[VT_HASH_LEN];
    if ((e = vt_sha256(manifest ? manifest : "", manifest_len, mhash))) goto fail;
    rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, SCHEMA_SQL, NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        e = db_fail(s, rc, "creating the schema");
        goto fail;
    }
    sqlite3_stmt *ins = NULL;
    rc = sqlite3_prepare_v2(s->db, "INSERT INTO meta(key, value) VALUES(?1, ?2)", -1, &ins, NULL);
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
    if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        e = db_fail(s, rc, "writing the manifest");
        goto fail;
    }
    if ((e = prepare_all(s))) goto fail;
    if ((e = fsync_dir(run_dir))) goto fail;
    if (made_dir) {
        char *parent = dir_of(run_dir);
        e = parent ? fsync_dir(parent) : vt_set_error(VT_ERR_NOMEM, "out of memory");
        free(parent);
        if (e) goto fail;
    }
    free(ckdir);
    *out = s;
    return VT_OK;

fail:
    if (s) {
        int had_db = s->db != NULL;
        char *db = str_printf("%s", s->db_path);
        char *wal = str_printf("%s-wal", s->db_path), *shm = str_printf("%s-shm", s->db_path);
        store_free(s);
        if (had_db) {
            if (db) unlink(db);
            if (wal) unlink(wal);
            if (shm) unlink(shm);
        }
        free(db);
        free(wal);
        free(shm);
    }
    if (made_ckdir) rmdir(ckdir);
    free(ckdir);
    if (made_dir) rmdir(run_dir);
    return e;
}

vt_err vt_store_open(const char *run_dir, int readonly, vt_store **out)
{
    VT_RETURN_ERROR_IF(!run_dir || !*run_dir || !out, VT_ERR_ARG, "vt_store_open: invalid argument");
    *out = NULL;
    vt_store *s = store_alloc(run_dir, readonly ? 1 : 0);
    VT_RETURN_ERROR_IF(!s, VT_ERR_NOMEM, "out of memory opening run store %s", run_dir);
    vt_err e = VT_OK;
    struct stat sb;
    if (stat(s->db_path, &sb) != 0) {
        e = vt_set_error(VT_ERR_IO, "cannot open run store %s: %s", s->db_path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(sb.st_mode)) {
        e = vt_set_error(VT_ERR_FORMAT, "not a run store: %s is not a regular file", s->db_path);
        goto fail;
    }
    int rc = sqlite3_open_v2(s->db_path, &s->db, s->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE, NULL);
    if (rc != SQLITE_OK) {
        e = db_fail(s, rc, "opening");
        goto fail;
    }
    if ((e = configure(s))) goto fail;
    if (s->readonly && sqlite3_exec(s->db, "PRAGMA query_only = ON", NULL, NULL, NULL) != SQLITE_OK) {
        e = db_fail(s, sqlite3_errcode(s->db), "setting query_only");
        goto fail;
    }
    if ((e = check_schema(s)) || (e = check_version(s))) goto fail;
    if (!s->readonly && (e = set_wal(s))) goto fail;
    if ((e = prepare_all(s))) goto fail;
    if ((e = read_manifest(s, NULL, NULL, NULL))) goto fail;
    *out = s;
    return VT_OK;
fail:
    store_free(s);
    return e;
}

void vt_store_close(vt_store *s)
{
    if (!s) return;
    if (s->db && !s->readonly) {
        /* Best effort, never waiting for readers: fold the WAL into run.db and leave the
         * file in rollback-journal mode so the finished run is one self-contained file. */
        sqlite3_busy_timeout(s->db, 0);
        if (sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) == SQLITE_OK)
            sqlite3_exec(s->db, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL);
    }
    store_free(s);
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
        e = db_fail(s, rc, "counting steps");
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
    stmt_done(s->minmax);
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

    VT_FORWARD_IF_ERROR(exec_stmt(s, s->begin, "beginning a transaction"));
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
            stmt_done(st);
            e = db_fail(s, rc, "binding a step");
        } else {
            e = exec_stmt(s, st, "writing a step");
        }
    }
    if (!e) e = exec_stmt(s, s->commit, "committing a step");
    if (e) rollback(s);
    return e;
}

vt_err vt_store_get_step(vt_store *s, uint64_t step, vt_step_rec *r)
{
    VT_RETURN_ERROR_IF(!s || !r, VT_ERR_ARG, "vt_store_get_step: invalid argument");
    memset(r, 0, sizeof *r);
    VT_RETURN_ERROR_IF(step >= (uint64_t)INT64_MAX, VT_ERR_ARG, "step %llu is not in run store %s",
                       (unsigned long long)step, s->db_path);
    sqlite3_stmt *st = s->get_step;
    int rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)step);
    if (rc != SQLITE_OK) {
        stmt_done(st);
        return db_fail(s, rc, "binding");
    }
    rc = sqlite3_step(st);
    vt_err e = VT_OK;
    if (rc == SQLITE_DONE) {
        stmt_done(st);
        uint64_t count = 0;
        VT_FORWARD_IF_ERROR(step_count(s, &count));
        if (step < count)
            VT_RETURN_ERROR(VT_ERR_FORMAT, "run store %s: step %llu is missing (the store has %llu steps)",
                            s->db_path, (unsigned long long)step, (unsigned long long)count);
        VT_RETURN_ERROR(VT_ERR_ARG, "step %llu is not in run store %s (%llu steps)", (unsigned long long)step,
                        s->db_path, (unsigned long long)count);
    }
    if (rc != SQLITE_ROW) {
        e = db_fail(s, rc, "reading a step");
    } else {
        uint64_t loss = 0, has = 0, entries = 0;
        if (!e) e = col_uint(s, st, 0, UINT32_MAX, &loss, "loss_bits", step);
        if (!e) e = col_uint(s, st, 1, 1, &has, "has_state", step);
        if (!e) e = col_hash(s, st, 2, r->state_hash, "state_hash", "step", step);
        if (!e) e = col_hash(s, st, 3, r->log_hash, "log_hash", "step", step);
        if (!e) e = col_hash(s, st, 4, r->leaf, "leaf", "step", step);
        if (!e) e = col_uint(s, st, 5, (uint64_t)INT64_MAX, &entries, "log_entries", step);
        if (!e) {
            r->step = step;
            r->loss_bits = (uint32_t)loss;
            r->has_state = (int)has;
            r->log_entries = entries;
        } else {
            memset(r, 0, sizeof *r);
        }
    }
    stmt_done(st);
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
        stmt_done(st);
        return db_fail(s, rc, "binding");
    }
    rc = sqlite3_step(st);
    vt_err e = VT_OK;
    if (rc == SQLITE_DONE) {
        e = vt_set_error(VT_ERR_ARG, "step %llu is not in run store %s", (unsigned long long)step, s->db_path);
    } else if (rc != SQLITE_ROW) {
        e = db_fail(s, rc, "reading a step log");
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
    stmt_done(st);
    return e;
}

/* ------------------------------------------------------------------ checkpoints */

void vt_store_commitment_path(const char *run_dir, char *out, size_t cap)
{
    if (cap) snprintf(out, cap, "%s/commitment.vtc", run_dir);
}

void vt_store_checkpoint_path(const char *run_dir, uint64_t step, char *out, size_t cap)
{
    if (cap) snprintf(out, cap, "%s/checkpoints/ckpt-%012llu.vtck", run_dir, (unsigned long long)step);
}

static char *ckpt_path(const vt_store *s, uint64_t step)
{
    return str_printf("%s/checkpoints/ckpt-%012llu.vtck", s->run_dir, (unsigned long long)step);
}

vt_err vt_store_truncate(vt_store *s, uint64_t step)
{
    VT_RETURN_ERROR_IF(!s, VT_ERR_ARG, "vt_store_truncate: invalid argument");
    VT_RETURN_ERROR_IF(s->readonly, VT_ERR_ARG, "run store %s is open read-only", s->db_path);
    if (step >= (uint64_t)INT64_MAX) return VT_OK; /* no step can be above it */

    VT_FORWARD_IF_ERROR(exec_stmt(s, s->begin, "beginning a transaction"));
    uint64_t *gone = NULL;
    size_t n_gone = 0, cap = 0;
    vt_err e = VT_OK;
    int rc = sqlite3_bind_int64(s->ckpts_after, 1, (sqlite3_int64)step);
    if (rc != SQLITE_OK) e = db_fail(s, rc, "binding");
    while (!e && (rc = sqlite3_step(s->ckpts_after)) == SQLITE_ROW) {
        if (sqlite3_column_type(s->ckpts_after, 0) != SQLITE_INTEGER) {
            e = vt_set_error(VT_ERR_FORMAT, "run store %s: malformed checkpoint step", s->db_path);
            break;
        }
        if (n_gone == cap) {
            size_t nc = cap ? 2 * cap : 16;
            uint64_t *g = realloc(gone, nc * sizeof *g);
            if (!g) {
                e = vt_set_error(VT_ERR_NOMEM, "out of memory truncating run store %s", s->db_path);
                break;
            }
            gone = g;
            cap = nc;
        }
        gone[n_gone++] = (uint64_t)sqlite3_column_int64(s->ckpts_after, 0);
    }
    if (!e && rc != SQLITE_DONE) e = db_fail(s, rc, "listing checkpoints");
    stmt_done(s->ckpts_after);

    if (!e) {
        rc = sqlite3_bind_int64(s->del_steps, 1, (sqlite3_int64)step);
        e = rc == SQLITE_OK ? exec_stmt(s, s->del_steps, "deleting steps") : db_fail(s, rc, "binding");
    }
    if (!e) {
        rc = sqlite3_bind_int64(s->del_ckpts, 1, (sqlite3_int64)step);
        e = rc == SQLITE_OK ? exec_stmt(s, s->del_ckpts, "deleting checkpoints") : db_fail(s, rc, "binding");
    }
    if (!e) e = exec_stmt(s, s->commit, "committing a truncation");
    if (e) {
        rollback(s);
        free(gone);
        return e;
    }
    /* The records are gone; now the files (an orphan file left by a crash here is harmless:
     * nothing refers to it and a later checkpoint of that step replaces it). */
    for (size_t i = 0; i < n_gone && !e; i++) {
        char *p = ckpt_path(s, gone[i]);
        if (!p) {
            e = vt_set_error(VT_ERR_NOMEM, "out of memory truncating run store %s", s->db_path);
        } else {
            if (unlink(p) != 0 && errno != ENOENT)
                e = vt_set_error(VT_ERR_IO, "cannot delete checkpoint file %s: %s", p, strerror(errno));
            free(p);
        }
    }
    free(gone);
    if (!e && n_gone) {
        char *d = str_printf("%s/checkpoints", s->run_dir);
        if (!d) return vt_set_error(VT_ERR_NOMEM, "out of memory");
        e = fsync_dir(d);
        free(d);
    }
    return e;
}

vt_err vt_store_put_checkpoint(vt_store *s, uint64_t step, const float *state, size_t n, int zstd_level)
{
    VT_RETURN_ERROR_IF(!s || (!state && n), VT_ERR_ARG, "vt_store_put_checkpoint: invalid argument");
    VT_RETURN_ERROR_IF(s->readonly, VT_ERR_ARG, "run store %s is open read-only", s->db_path);
    VT_RETURN_ERROR_IF(step >= (uint64_t)INT64_MAX, VT_ERR_ARG, "checkpoint step %llu out of range",
                       (unsigned long long)step);
    VT_RETURN_ERROR_IF(zstd_level < ZSTD_minCLevel() || zstd_level > ZSTD_maxCLevel(), VT_ERR_ARG,
                       "zstd level %d out of range", zstd_level);
    VT_RETURN_ERROR_IF(n > (SIZE_MAX - CKPT_HEADER_LEN) / 8 || (uint64_t)n > (uint64_t)INT64_MAX, VT_ERR_LIMIT,
                       "checkpoint of %zu values is too large", n);
    size_t raw_len = n * 4;
    size_t bound = ZSTD_compressBound(raw_len);
    VT_RETURN_ERROR_IF(ZSTD_isError(bound), VT_ERR_LIMIT, "checkpoint of %zu values is too large", n);

    const void *raw = state;
    uint8_t *conv = NULL;
    if (!VT_HOST_LE && n) {
        conv = malloc(raw_len);
        VT_RETURN_ERROR_IF(!conv, VT_ERR_NOMEM, "out of memory writing checkpoint %llu", (unsigned long long)step);
        for (size_t i = 0; i < n; i++) vt_put_u32le(conv + 4 * i, vt_f32_bits(state[i]));
        raw = conv;
    }
    uint8_t *file = malloc(CKPT_HEADER_LEN + bound);
    if (!file) {
        free(conv);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory writing checkpoint %llu", (unsigned long long)step);
    }
    memcpy(file, "VTCK", 4);
    vt_put_u16le(file + 4, CKPT_VERSION);
    vt_put_u16le(file + 6, 0);
    vt_put_u64le(file + 8, step);
    vt_put_u64le(file + 16, (uint64_t)n);
    static const uint8_t empty = 0;
    size_t zlen = ZSTD_compress(file + CKPT_HEADER_LEN, bound, raw ? raw : (const void *)&empty, raw_len, zstd_level);
    free(conv);
    vt_err e = VT_OK;
    char *path = NULL, *ckdir = NULL;
    uint8_t hash[VT_HASH_LEN];
    if (ZSTD_isError(zlen)) {
        e = vt_set_error(VT_ERR_INTERNAL, "checkpoint %llu: zstd: %s", (unsigned long long)step,
                         ZSTD_getErrorName(zlen));
        goto done;
    }
    size_t flen = CKPT_HEADER_LEN + zlen;
    if ((e = vt_sha256(file, flen, hash))) goto done;
    path = ckpt_path(s, step);
    ckdir = str_printf("%s/checkpoints", s->run_dir);
    if (!path || !ckdir) {
        e = vt_set_error(VT_ERR_NOMEM, "out of memory writing checkpoint %llu", (unsigned long long)step);
        goto done;
    }
    if (mkdir(ckdir, 0777) != 0 && errno != EEXIST) {
        e = vt_set_error(VT_ERR_IO, "cannot create %s: %s", ckdir, strerror(errno));
        goto done;
    }
    if ((e = write_atomic(path, file, flen))) goto done;

    sqlite3_stmt *st = s->put_ckpt;
    int rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)step);
    if (rc == SQLITE_OK) rc = sqlite3_bind_blob(st, 2, hash, VT_HASH_LEN, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 3, (sqlite3_int64)n);
    if (rc != SQLITE_OK) {
        stmt_done(st);
        e = db_fail(s, rc, "binding");
    } else {
        e = exec_stmt(s, st, "recording a checkpoint");
    }
done:
    free(file);
    free(path);
    free(ckdir);
    return e;
}

vt_err vt_store_get_checkpoint(vt_store *s, uint64_t step, size_t expected_n, float **state)
{
    VT_RETURN_ERROR_IF(!s || !state, VT_ERR_ARG, "vt_store_get_checkpoint: invalid argument");
    *state = NULL;
    VT_RETURN_ERROR_IF(step >= (uint64_t)INT64_MAX, VT_ERR_ARG, "no checkpoint at step %llu",
                       (unsigned long long)step);
    VT_RETURN_ERROR_IF(expected_n > (SIZE_MAX - CKPT_HEADER_LEN) / 8, VT_ERR_LIMIT,
                       "checkpoint of %zu values is too large", expected_n);
    size_t raw_len = expected_n * 4;
    size_t zbound = ZSTD_compressBound(raw_len);
    VT_RETURN_ERROR_IF(ZSTD_isError(zbound), VT_ERR_LIMIT, "checkpoint of %zu values is too large", expected_n);
    size_t max_file = CKPT_HEADER_LEN + zbound;

    /* The record. */
    uint8_t want[VT_HASH_LEN];
    uint64_t rec_n = 0;
    sqlite3_stmt *st = s->get_ckpt;
    int rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)step);
    if (rc != SQLITE_OK) {
        stmt_done(st);
        return db_fail(s, rc, "binding");
    }
    rc = sqlite3_step(st);
    vt_err e = VT_OK;
    if (rc == SQLITE_DONE)
        e = vt_set_error(VT_ERR_ARG, "run store %s has no checkpoint at step %llu", s->db_path,
                         (unsigned long long)step);
    else if (rc != SQLITE_ROW)
        e = db_fail(s, rc, "reading a checkpoint record");
    if (!e) e = col_hash(s, st, 0, want, "file_hash", "checkpoint", step);
    if (!e) e = col_uint(s, st, 1, (uint64_t)INT64_MAX, &rec_n, "n_values of checkpoint", step);
    stmt_done(st);
    if (e) return e;

    /* The file: hash every byte first; keep the bytes only when the size can be valid. */
    char *path = ckpt_path(s, step);
    VT_RETURN_ERROR_IF(!path, VT_ERR_NOMEM, "out of memory");
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL, *out = NULL;
    vt_sha256_ctx hc = {0};
    int hc_live = 0;
    if (!f) {
        e = vt_set_error(VT_ERR_IO, "checkpoint %llu: cannot open %s: %s", (unsigned long long)step, path,
                         strerror(errno));
        goto done;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        e = vt_set_error(VT_ERR_IO, "checkpoint %llu: %s is not a regular file", (unsigned long long)step, path);
        goto done;
    }
    if ((e = vt_sha256_init(&hc))) goto done;
    hc_live = 1;
    size_t size = 0;
    int too_big = (uint64_t)sb.st_size > (uint64_t)max_file;
    if (!too_big) {
        size_t cap = (size_t)sb.st_size + 1; /* one extra byte to notice a file that grew */
        buf = malloc(cap);
        if (!buf) {
            e = vt_set_error(VT_ERR_NOMEM, "out of memory reading checkpoint %llu", (unsigned long long)step);
            goto done;
        }
        size = fread(buf, 1, cap, f);
        if (ferror(f)) {
            e = vt_set_error(VT_ERR_IO, "checkpoint %llu: cannot read %s", (unsigned long long)step, path);
            goto done;
        }
        if (size != (size_t)sb.st_size) {
            e = vt_set_error(VT_ERR_IO, "checkpoint %llu: %s changed while being read", (unsigned long long)step,
                             path);
            goto done;
        }
        if ((e = vt_sha256_update(&hc, buf, size))) goto done;
    } else {
        uint8_t chunk[65536];
        size_t got;
        while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
            if ((e = vt_sha256_update(&hc, chunk, got))) goto done;
        if (ferror(f)) {
            e = vt_set_error(VT_ERR_IO, "checkpoint %llu: cannot read %s", (unsigned long long)step, path);
            goto done;
        }
    }
    uint8_t got_hash[VT_HASH_LEN];
    hc_live = 0;
    if ((e = vt_sha256_final(&hc, got_hash))) goto done;
    /* Structure first (an unreadable file is VT_ERR_FORMAT), then the hash (a well-formed file
     * whose bytes differ from the recorded ones is VT_ERR_MISMATCH: it was altered). */
    int hash_bad = memcmp(got_hash, want, VT_HASH_LEN) != 0;
    if (too_big) {
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s is larger than any checkpoint of %zu values",
                         (unsigned long long)step, path, expected_n);
        goto done;
    }

    /* The header. */
    vt_reader r;
    vt_reader_init(&r, buf, size);
    uint8_t magic[4];
    uint16_t version = 0, flags = 0;
    uint64_t hstep = 0, hn = 0;
    if ((e = vt_read_bytes(&r, magic, 4, "checkpoint magic")) || (e = vt_read_u16le(&r, &version, "checkpoint version")) ||
        (e = vt_read_u16le(&r, &flags, "checkpoint flags")) || (e = vt_read_u64le(&r, &hstep, "checkpoint step")) ||
        (e = vt_read_u64le(&r, &hn, "checkpoint n_values"))) {
        vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s is truncated (%zu bytes)", (unsigned long long)step, path,
                     size);
        goto done;
    }
    if (memcmp(magic, "VTCK", 4) != 0) {
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s is not a checkpoint file (bad magic)",
                         (unsigned long long)step, path);
    } else if (version != CKPT_VERSION) {
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s has version %u, not %d", (unsigned long long)step, path,
                         version, CKPT_VERSION);
    } else if (flags != 0) {
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s has unknown flags 0x%04x", (unsigned long long)step, path,
                         flags);
    } else if (hstep != step) {
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s declares step %llu", (unsigned long long)step, path,
                         (unsigned long long)hstep);
    } else if (hn != (uint64_t)expected_n || rec_n != (uint64_t)expected_n) {
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s holds %llu values (recorded %llu), expected %zu",
                         (unsigned long long)step, path, (unsigned long long)hn, (unsigned long long)rec_n,
                         expected_n);
    }
    if (e) goto done;

    /* The frame: one zstd frame (not a skippable one) declaring exactly n*4 bytes, nothing after it. */
    const uint8_t *z = buf + CKPT_HEADER_LEN;
    size_t zlen = size - CKPT_HEADER_LEN;
    if (zlen < 4 || vt_get_u32le(z) != ZSTD_MAGICNUMBER) {
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s: the payload is not a zstd frame",
                         (unsigned long long)step, path);
        goto done;
    }
    unsigned long long csize = ZSTD_getFrameContentSize(z, zlen);
    if (csize == ZSTD_CONTENTSIZE_ERROR) {
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s: malformed zstd frame header", (unsigned long long)step,
                         path);
    } else if (csize == ZSTD_CONTENTSIZE_UNKNOWN) {
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s: the zstd frame does not declare its size",
                         (unsigned long long)step, path);
    } else if (csize != (unsigned long long)raw_len) {
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s: the zstd frame declares %llu bytes, expected %zu",
                         (unsigned long long)step, path, csize, raw_len);
    } else {
        size_t fsize = ZSTD_findFrameCompressedSize(z, zlen);
        if (ZSTD_isError(fsize))
            e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s: truncated or corrupt zstd frame (%s)",
                             (unsigned long long)step, path, ZSTD_getErrorName(fsize));
        else if (fsize != zlen)
            e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s: %zu trailing bytes after the zstd frame",
                             (unsigned long long)step, path, zlen - fsize);
    }
    if (e) goto done;
    if (hash_bad) {
        e = vt_set_error(VT_ERR_MISMATCH, "checkpoint %llu does not match its recorded hash (%s)",
                         (unsigned long long)step, path);
        goto done;
    }
    out = malloc(raw_len ? raw_len : 1);
    if (!out) {
        e = vt_set_error(VT_ERR_NOMEM, "out of memory reading checkpoint %llu", (unsigned long long)step);
        goto done;
    }
    size_t dlen = ZSTD_decompress(out, raw_len, z, zlen);
    if (ZSTD_isError(dlen)) {
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s: corrupt zstd frame (%s)", (unsigned long long)step,
                         path, ZSTD_getErrorName(dlen));
        goto done;
    }
    if (dlen != raw_len) {
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s: the frame holds %zu bytes, expected %zu",
                         (unsigned long long)step, path, dlen, raw_len);
        goto done;
    }
    if (!VT_HOST_LE) {
        for (size_t i = 0; i < expected_n; i++) {
            float v = vt_bits_f32(vt_get_u32le(out + 4 * i));
            memcpy(out + 4 * i, &v, 4);
        }
    }
    *state = (float *)(void *)out;
    out = NULL;
done:
    if (hc_live) vt_sha256_abort(&hc);
    if (f) fclose(f);
    free(buf);
    free(out);
    free(path);
    return e;
}

vt_err vt_store_list_checkpoints(vt_store *s, uint64_t **steps, size_t *n)
{
    VT_RETURN_ERROR_IF(!s || !steps || !n, VT_ERR_ARG, "vt_store_list_checkpoints: invalid argument");
    *steps = NULL;
    *n = 0;
    uint64_t *v = NULL;
    size_t len = 0, cap = 0;
    vt_err e = VT_OK;
    int rc;
    while ((rc = sqlite3_step(s->list_ckpt)) == SQLITE_ROW) {
        if (sqlite3_column_type(s->list_ckpt, 0) != SQLITE_INTEGER || sqlite3_column_int64(s->list_ckpt, 0) < 0) {
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
        v[len++] = (uint64_t)sqlite3_column_int64(s->list_ckpt, 0);
    }
    if (!e && rc != SQLITE_DONE) e = db_fail(s, rc, "listing checkpoints");
    stmt_done(s->list_ckpt);
    if (e) {
        free(v);
        return e;
    }
    *steps = v;
    *n = len;
    return VT_OK;
}

/* ------------------------------------------------------------------ commitment */

void vt_commitment_body(const vt_commitment *c, uint8_t out[VT_COMMITMENT_BODY_LEN])
{
    memcpy(out, "VTCM", 4);
    vt_put_u32le(out + 4, c->version);
    memcpy(out + 8, c->manifest_hash, VT_HASH_LEN);
    vt_put_u64le(out + 40, c->step_count);
    memcpy(out + 48, c->root, VT_HASH_LEN);
    memcpy(out + 80, c->public_key, 32);
}

vt_err vt_commitment_write(const char *path, const vt_commitment *c)
{
    VT_RETURN_ERROR_IF(!path || !c, VT_ERR_ARG, "vt_commitment_write: invalid argument");
    VT_RETURN_ERROR_IF(c->version != COMMITMENT_VERSION, VT_ERR_ARG, "commitment version %u is not %d", c->version,
                       COMMITMENT_VERSION);
    uint8_t file[VT_COMMITMENT_FILE_LEN];
    vt_commitment_body(c, file);
    memcpy(file + VT_COMMITMENT_BODY_LEN, c->signature, 64);
    return write_atomic(path, file, sizeof file);
}

vt_err vt_commitment_read(const char *path, vt_commitment *c)
{
    VT_RETURN_ERROR_IF(!path || !c, VT_ERR_ARG, "vt_commitment_read: invalid argument");
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "rb");
    VT_RETURN_ERROR_IF(!f, VT_ERR_IO, "cannot open commitment file %s: %s", path, strerror(errno));
    uint8_t file[VT_COMMITMENT_FILE_LEN + 1];
    size_t n = fread(file, 1, sizeof file, f);
    int bad = ferror(f);
    fclose(f);
    VT_RETURN_ERROR_IF(bad, VT_ERR_IO, "cannot read commitment file %s", path);
    VT_RETURN_ERROR_IF(n != VT_COMMITMENT_FILE_LEN, VT_ERR_FORMAT, "commitment file %s is %s%zu bytes, not %d", path,
                       n > VT_COMMITMENT_FILE_LEN ? "more than " : "", n > VT_COMMITMENT_FILE_LEN ? n - 1 : n,
                       VT_COMMITMENT_FILE_LEN);
    VT_RETURN_ERROR_IF(memcmp(file, "VTCM", 4) != 0, VT_ERR_FORMAT, "%s is not a commitment file (bad magic)", path);
    uint32_t version = vt_get_u32le(file + 4);
    VT_RETURN_ERROR_IF(version != COMMITMENT_VERSION, VT_ERR_FORMAT, "commitment file %s has version %u, not %d", path,
                       version, COMMITMENT_VERSION);
    c->version = version;
    memcpy(c->manifest_hash, file + 8, VT_HASH_LEN);
    c->step_count = vt_get_u64le(file + 40);
    memcpy(c->root, file + 48, VT_HASH_LEN);
    memcpy(c->public_key, file + 80, 32);
    memcpy(c->signature, file + VT_COMMITMENT_BODY_LEN, 64);
    return VT_OK;
}
