/* test_store_faults.c - the run directory's writer lock, its order of writes and its end
 * (store/, issue 22 findings 1, 2 and 6; the programs under the same faults: tests/e2e/run_faults.sh):
 *   - a second writer is refused naming the holder's PID, readers are not, the lock goes with close;
 *   - creation: run.db appears only complete; a directory holding only an interrupted creation's
 *     leftovers is accepted, one holding a run or anything else is refused with a clear message;
 *   - a writable open removes killed writers' temporaries, a read-only one touches nothing;
 *   - truncation removes checkpoint files after the step, recorded or not;
 *   - vt_store_finish: a reader holding an older snapshot blocks it (VT_ERR_IO naming the problem,
 *     after the bounded wait), a reader of the latest snapshot or an idle one does not; afterwards
 *     run.db copied alone holds every step;
 *   - the fault hook sees the write points in the documented order. */
#include "vt_test.h"

#include <dirent.h>
#include <ftw.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/vt_store.h"

static char g_root[256];

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static void rm_rf(const char *p) { nftw(p, rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

static void path_in(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", g_root, name); }

static int touch(const char *dir, const char *name, const char *content)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) return -1;
    fputs(content, f);
    return fclose(f);
}

static int exists(const char *dir, const char *name)
{
    char p[700];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0;
}

static void rec_of(vt_step_rec *r, uint64_t step)
{
    memset(r, 0, sizeof *r);
    r->step = step;
    r->loss_bits = (uint32_t)(step * 2654435761u);
    r->has_state = (int)(step % 2);
    for (int i = 0; i < 32; i++) {
        r->state_hash[i] = (uint8_t)(step + (uint64_t)i);
        r->log_hash[i] = (uint8_t)(3 * step + (uint64_t)i);
        r->leaf[i] = (uint8_t)(7 * step + (uint64_t)i);
    }
}

/* Appends steps [from, to) with a 3000-byte log each (so the WAL grows by pages). */
static void put_steps(vt_store *s, uint64_t from, uint64_t to)
{
    static uint8_t log[3000];
    for (uint64_t i = from; i < to; i++) {
        vt_step_rec r;
        rec_of(&r, i);
        memset(log, (int)(i & 0xff), sizeof log);
        CHECK_OK(vt_store_put_step(s, &r, log, sizeof log));
    }
}

static uint64_t count_of(const char *dir)
{
    vt_store *s = NULL;
    uint64_t c = 0;
    CHECK_OK(vt_store_open(dir, 1, &s));
    if (s) CHECK_OK(vt_store_step_count(s, &c));
    vt_store_close(s);
    return c;
}

/* run.db alone copied into a fresh directory: its step count (0 when it cannot be opened). */
static uint64_t count_of_copy(const char *dir, const char *name)
{
    char copy[600], cmd[2600];
    path_in(copy, sizeof copy, name);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir '%s' && cp '%s/run.db' '%s/'", copy, copy, dir, copy);
    CHECK(system(cmd) == 0, "%s", cmd);
    vt_store *s = NULL;
    uint64_t c = 0;
    vt_err e = vt_store_open(copy, 1, &s);
    CHECK(e == VT_OK, "run.db of %s copied alone does not open: %s", dir, vt_errmsg());
    if (s) CHECK_OK(vt_store_step_count(s, &c));
    vt_store_close(s);
    return c;
}

static void test_lock(void)
{
    char dir[512];
    path_in(dir, sizeof dir, "lock");
    vt_store *w = NULL, *w2 = NULL, *r = NULL;
    CHECK_OK(vt_store_create(dir, "m", 1, &w));
    if (!w) return;
    put_steps(w, 0, 3);
    char want[64];
    snprintf(want, sizeof want, "(pid %ld,", (long)getpid());
    vt_err e = vt_store_open(dir, 0, &w2);
    CHECK(e == VT_ERR_IO && !w2 && strstr(vt_errmsg(), "is in use by another trainer") && strstr(vt_errmsg(), want),
          "a second writer: %d: %s", e, vt_errmsg());
    CHECK_OK(vt_store_open(dir, 1, &r)); /* readers are not locked out */
    vt_store_close(r);
    vt_store_close(w);
    CHECK_OK(vt_store_open(dir, 0, &w2)); /* the lock went with close */
    if (w2) put_steps(w2, 3, 4);
    vt_store_close(w2);
    CHECK(count_of(dir) == 4, "steps after the second writer");
}

static void test_create(void)
{
    char dir[512], ck[600];
    vt_store *s = NULL;
    /* an interrupted creation's leftovers: accepted, replaced */
    path_in(dir, sizeof dir, "leftovers");
    snprintf(ck, sizeof ck, "%s/checkpoints", dir);
    CHECK(mkdir(dir, 0777) == 0 && mkdir(ck, 0777) == 0, "mkdir");
    CHECK(touch(dir, "run.lock", "12345\n") == 0 && touch(dir, "run.db.new", "garbage") == 0 &&
              touch(dir, "run.db.new-journal", "garbage") == 0,
          "leftovers");
    CHECK_OK(vt_store_create(dir, "m", 1, &s));
    if (s) put_steps(s, 0, 2);
    vt_store_close(s);
    CHECK(!exists(dir, "run.db.new") && !exists(dir, "run.db.new-journal"), "leftovers removed");
    CHECK(count_of(dir) == 2, "the store created over leftovers");
    /* a run: refused, saying what to do */
    s = NULL;
    vt_err e = vt_store_create(dir, "m", 1, &s);
    CHECK(e == VT_ERR_ARG && !s && strstr(vt_errmsg(), "it holds a run (run.db)") && strstr(vt_errmsg(), "--resume"),
          "create over a run: %d: %s", e, vt_errmsg());
    CHECK(count_of(dir) == 2, "the refused create left the run alone");
    /* anything else: refused, naming it, and nothing is added */
    path_in(dir, sizeof dir, "other");
    CHECK(mkdir(dir, 0777) == 0 && touch(dir, "notes.txt", "x") == 0, "other");
    e = vt_store_create(dir, "m", 1, &s);
    CHECK(e == VT_ERR_ARG && strstr(vt_errmsg(), "not empty (notes.txt)"), "create over other files: %s", vt_errmsg());
    CHECK(!exists(dir, "run.lock") && !exists(dir, "checkpoints"), "a refused create wrote nothing");
    /* leftovers plus a non-empty checkpoints/: not a fresh directory */
    path_in(dir, sizeof dir, "leftovers2");
    snprintf(ck, sizeof ck, "%s/checkpoints", dir);
    CHECK(mkdir(dir, 0777) == 0 && mkdir(ck, 0777) == 0 && touch(ck, "ckpt-000000000000.vtck", "x") == 0, "mkdir");
    e = vt_store_create(dir, "m", 1, &s);
    CHECK(e == VT_ERR_ARG && strstr(vt_errmsg(), "not empty (checkpoints)"), "checkpoints not empty: %s", vt_errmsg());
}

static void test_temps_and_truncate(void)
{
    char dir[512], ck[600];
    path_in(dir, sizeof dir, "temps");
    snprintf(ck, sizeof ck, "%s/checkpoints", dir);
    vt_store *s = NULL;
    CHECK_OK(vt_store_create(dir, "m", 1, &s));
    if (!s) return;
    put_steps(s, 0, 9);
    float x[16] = {1, 2, 3};
    for (uint64_t k = 0; k <= 8; k += 4) CHECK_OK(vt_store_put_checkpoint(s, k, x, 16, 3));
    vt_store_close(s);
    CHECK(touch(ck, "ckpt-000000000012.vtck.tmp-99999-0", "x") == 0 && touch(dir, "commitment.vtc.tmp-99999-3", "x") == 0 &&
              touch(ck, "ckpt-000000000010.vtck", "unrecorded") == 0,
          "temps");
    CHECK_OK(vt_store_open(dir, 1, &s)); /* a reader touches nothing */
    vt_store_close(s);
    CHECK(exists(ck, "ckpt-000000000012.vtck.tmp-99999-0") && exists(dir, "commitment.vtc.tmp-99999-3"), "reader");
    CHECK_OK(vt_store_open(dir, 0, &s));
    CHECK(!exists(ck, "ckpt-000000000012.vtck.tmp-99999-0") && !exists(dir, "commitment.vtc.tmp-99999-3"),
          "a writer's open removes the temporaries of killed writers");
    CHECK(exists(ck, "ckpt-000000000010.vtck"), "an unrecorded checkpoint stays until a truncation");
    if (s) CHECK_OK(vt_store_truncate(s, 4));
    CHECK(exists(ck, "ckpt-000000000000.vtck") && exists(ck, "ckpt-000000000004.vtck") &&
              !exists(ck, "ckpt-000000000008.vtck") && !exists(ck, "ckpt-000000000010.vtck"),
          "truncation to 4 removes the checkpoint files after it, recorded or not");
    vt_store_close(s);
}

static sqlite3 *reader(const char *dir, int txn)
{
    char p[600];
    snprintf(p, sizeof p, "%s/run.db", dir);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL);
    if (rc == SQLITE_OK && txn) rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM steps", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st) == SQLITE_ROW ? SQLITE_OK : SQLITE_ERROR;
    sqlite3_finalize(st);
    CHECK(rc == SQLITE_OK, "reader: %s", sqlite3_errmsg(db));
    return db;
}

static void test_finish(void)
{
    char dir[512];
    path_in(dir, sizeof dir, "finish");
    vt_store *w = NULL;
    CHECK_OK(vt_store_create(dir, "m", 1, &w));
    if (!w) return;
    put_steps(w, 0, 5);
    sqlite3 *r = reader(dir, 1); /* a snapshot of 5 steps */
    put_steps(w, 5, 60);
    vt_err e = vt_store_finish(w, 0);
    CHECK(e == VT_ERR_IO && strstr(vt_errmsg(), "is not self-contained") && strstr(vt_errmsg(), "older snapshot"),
          "finish with an older snapshot held: %d: %s", e, vt_errmsg());
    sqlite3_exec(r, "COMMIT", NULL, NULL, NULL); /* the reader lets go; its connection stays open, idle */
    CHECK_OK(vt_store_finish(w, 0));
    CHECK(count_of_copy(dir, "finish-copy1") == 60, "run.db alone after finish, an idle reader open");
    /* a reader of the latest snapshot does not block the copy either */
    put_steps(w, 60, 80);
    sqlite3_exec(r, "BEGIN; SELECT count(*) FROM steps", NULL, NULL, NULL);
    int rc = sqlite3_exec(r, "SELECT count(*) FROM steps", NULL, NULL, NULL);
    CHECK(rc == SQLITE_OK, "reader");
    CHECK_OK(vt_store_finish(w, 0));
    CHECK(count_of_copy(dir, "finish-copy2") == 80, "run.db alone after finish, a reader of the latest snapshot");
    sqlite3_exec(r, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(r);
    put_steps(w, 80, 90);
    CHECK_OK(vt_store_finish(w, 100)); /* no reader: run.db back in rollback-journal mode */
    vt_store_close(w);
    CHECK(!exists(dir, "run.db-wal") && !exists(dir, "run.db-shm"), "a finished run is the single file run.db");
    CHECK(count_of_copy(dir, "finish-copy3") == 90, "run.db alone after finish");
}

static char g_points[4096];

static void record_point(const char *p)
{
    if (strlen(g_points) + strlen(p) + 2 < sizeof g_points) {
        strcat(g_points, p);
        strcat(g_points, " ");
    }
}

static void test_points(void)
{
    char dir[512];
    path_in(dir, sizeof dir, "points");
    vt_store_set_fault_hook(record_point);
    vt_store *s = NULL;
    CHECK_OK(vt_store_create(dir, "m", 1, &s));
    if (s) {
        put_steps(s, 0, 1);
        float x[64] = {0};
        CHECK_OK(vt_store_put_checkpoint(s, 0, x, 64, 3));
        CHECK_OK(vt_store_truncate(s, 0));
        CHECK_OK(vt_store_finish(s, 0));
    }
    vt_store_close(s);
    vt_store_set_fault_hook(NULL);
    const char *want = "create.locked create.db-new create.renamed step.stored ckpt.tmp-created ckpt.tmp-half "
                       "ckpt.tmp-written ckpt.tmp-synced ckpt.renamed ckpt.dir-synced ckpt.recorded "
                       "truncate.recorded finish.folded ";
    CHECK(strcmp(g_points, want) == 0, "write points:\n  %s\nexpected\n  %s", g_points, want);
}

int main(void)
{
    snprintf(g_root, sizeof g_root, "%s/vt_store_faults_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_root)) {
        perror("mkdtemp");
        return 1;
    }
    test_lock();
    test_create();
    test_temps_and_truncate();
    test_finish();
    test_points();
    rm_rf(g_root);
    return vt_test_finish("test_store_faults");
}
