/* test_store.c - the run directory (store/): the SQLite run store (vt_store.c: manifest,
 * steps, logs, order, truncation, read-only opens), checkpoint files (vt_checkpoint.c:
 * bit-exact round trip, every kind of damage), commitment files (vt_commitment.c: round
 * trip, every truncation) and hostile run.db files (garbage, truncated and corrupted
 * copies, foreign schemas): every failure must be a clean error code, never a crash (run it
 * under ASan+UBSan too). */
#include "vt_test.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include "common/vt_bytes.h"
#include "common/vt_hash.h"
#include "store/vt_checkpoint.h"
#include "store/vt_commitment.h"
#include "store/vt_store.h"

static char g_root[256];
static vt_rng g_rng;

/* ------------------------------------------------------------------ file helpers */

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static void rm_rf(const char *p) { nftw(p, rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

static void path_in(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", g_root, name); }

static int write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = (n == 0 || fwrite(p, 1, n, f) == n);
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(len > 0 ? (size_t)len : 1);
    if (b && len > 0 && fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return b;
}

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Number of entries in a directory other than . and .. */
static int dir_entries(const char *dir, char *names, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    if (cap) names[0] = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        n++;
        if (cap && strlen(names) + strlen(e->d_name) + 2 < cap) {
            strcat(names, e->d_name);
            strcat(names, " ");
        }
    }
    closedir(d);
    return n;
}

/* Run SQL on a database file directly (to build hostile stores). */
static int raw_sql(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open(db_path, &db);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, 5000);
        rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    }
    if (rc != SQLITE_OK) fprintf(stderr, "raw_sql(%s): %s\n", sql, db ? sqlite3_errmsg(db) : "?");
    sqlite3_close(db);
    return rc;
}

/* ------------------------------------------------------------------ records */

static void fill_hash(uint8_t h[32])
{
    for (int i = 0; i < 32; i++) h[i] = (uint8_t)vt_rng_next(&g_rng);
}

static void make_rec(vt_step_rec *r, uint64_t step)
{
    memset(r, 0, sizeof *r);
    r->step = step;
    r->loss_bits = step ? (uint32_t)vt_rng_next(&g_rng) : 0;
    r->has_state = (step % 3) == 0;
    fill_hash(r->state_hash);
    fill_hash(r->log_hash);
    fill_hash(r->leaf);
    r->log_entries = vt_rng_next(&g_rng) % 100000;
}

static size_t make_log(uint8_t *buf, size_t cap, uint64_t step)
{
    size_t n = step == 0 ? 0 : (size_t)(vt_rng_next(&g_rng) % cap);
    for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)(vt_rng_next(&g_rng) >> 7);
    return n;
}

static int rec_equal(const vt_step_rec *a, const vt_step_rec *b)
{
    return a->step == b->step && a->loss_bits == b->loss_bits && a->has_state == b->has_state &&
           !memcmp(a->state_hash, b->state_hash, 32) && !memcmp(a->log_hash, b->log_hash, 32) &&
           !memcmp(a->leaf, b->leaf, 32) && a->log_entries == b->log_entries;
}

#define NSTEPS 41
#define LOGCAP 6000
static vt_step_rec g_recs[NSTEPS];
static uint8_t g_logs[NSTEPS][LOGCAP];
static size_t g_loglen[NSTEPS];
static const char g_manifest[] = "{\"recipe\":\"mlp\",\"dataset\":\"digits\",\"seed\":7}";

/* Create a store at root/name with NSTEPS steps (fresh random records each time). */
static vt_store *make_store(const char *name, char *dir, size_t cap)
{
    path_in(dir, cap, name);
    vt_store *s = NULL;
    CHECK_OK(vt_store_create(dir, g_manifest, strlen(g_manifest), &s));
    if (!s) return NULL;
    for (uint64_t i = 0; i < NSTEPS; i++) {
        make_rec(&g_recs[i], i);
        g_loglen[i] = make_log(g_logs[i], LOGCAP, i);
        CHECK_OK(vt_store_put_step(s, &g_recs[i], g_logs[i], g_loglen[i]));
    }
    return s;
}

/* Read every step and log back and compare. */
static void check_contents(vt_store *s, const char *what)
{
    uint64_t count = 0;
    CHECK_OK(vt_store_step_count(s, &count));
    CHECK(count == NSTEPS, "%s: count %llu", what, (unsigned long long)count);
    for (uint64_t i = 0; i < NSTEPS; i++) {
        vt_step_rec r;
        CHECK_OK(vt_store_get_step(s, i, &r));
        CHECK(rec_equal(&r, &g_recs[i]), "%s: step %llu differs", what, (unsigned long long)i);
        uint8_t *blob = NULL;
        size_t len = 0;
        CHECK_OK(vt_store_get_log(s, i, &blob, &len));
        CHECK(blob && len == g_loglen[i] && (len == 0 || !memcmp(blob, g_logs[i], len)), "%s: log %llu differs",
              what, (unsigned long long)i);
        free(blob);
    }
    char *m = NULL;
    size_t mlen = 0;
    uint8_t h[32], want[32];
    CHECK_OK(vt_store_manifest(s, &m, &mlen, h));
    CHECK_OK(vt_sha256(g_manifest, strlen(g_manifest), want));
    CHECK(m && mlen == strlen(g_manifest) && !memcmp(m, g_manifest, mlen) && m[mlen] == 0, "%s: manifest", what);
    CHECK(!memcmp(h, want, 32), "%s: manifest hash", what);
    free(m);
}

/* ------------------------------------------------------------------ tests */

static void test_roundtrip(void)
{
    char dir[512], p[600];
    vt_store *s = make_store("rt", dir, sizeof dir);
    if (!s) return;
    check_contents(s, "fresh");
    vt_step_rec r;
    CHECK(vt_store_get_step(s, NSTEPS, &r) == VT_ERR_ARG, "step past the end");
    uint8_t *blob = NULL;
    size_t len = 0;
    CHECK(vt_store_get_log(s, NSTEPS, &blob, &len) == VT_ERR_ARG && !blob, "log past the end");
    vt_store_close(s);

    /* A finished run is a single run.db (plus the checkpoints directory and the writer's lock file). */
    char names[256];
    int n = dir_entries(dir, names, sizeof names);
    CHECK(n == 3, "run dir after close has %d entries: %s", n, names);

    CHECK_OK(vt_store_open(dir, 0, &s));
    if (s) {
        check_contents(s, "reopened");
        vt_store_close(s);
    }

    /* Read-only: reads work, writes fail, nothing is left behind. */
    CHECK_OK(vt_store_open(dir, 1, &s));
    if (s) {
        check_contents(s, "read-only");
        vt_step_rec extra;
        make_rec(&extra, NSTEPS);
        CHECK(vt_store_put_step(s, &extra, NULL, 0) != VT_OK, "write through a read-only store");
        CHECK(vt_store_truncate(s, 3) != VT_OK, "truncate through a read-only store");
        float x = 1.0f;
        CHECK(vt_store_put_checkpoint(s, 1, &x, 1, 3) != VT_OK, "checkpoint through a read-only store");
        uint64_t c = 0;
        CHECK_OK(vt_store_step_count(s, &c));
        CHECK(c == NSTEPS, "count after refused writes");
        vt_store_close(s);
    }
    n = dir_entries(dir, names, sizeof names);
    CHECK(n == 3, "run dir after a read-only open has %d entries: %s", n, names);

    /* Only run.db copied elsewhere, opened read-only. */
    char copy[512];
    path_in(copy, sizeof copy, "rt-copy");
    CHECK(mkdir(copy, 0777) == 0, "mkdir");
    snprintf(p, sizeof p, "%s/run.db", dir);
    size_t dblen = 0;
    uint8_t *db = read_file(p, &dblen);
    snprintf(p, sizeof p, "%s/run.db", copy);
    CHECK(db && write_file(p, db, dblen) == 0, "copy run.db");
    free(db);
    CHECK_OK(vt_store_open(copy, 1, &s));
    if (s) {
        check_contents(s, "copy");
        vt_store_close(s);
    }

    /* Create refuses a non-empty directory, accepts an empty one; open needs a store. */
    CHECK(vt_store_create(dir, "x", 1, &s) != VT_OK && !s, "create over an existing run");
    char empty[512];
    path_in(empty, sizeof empty, "empty-dir");
    CHECK(mkdir(empty, 0777) == 0, "mkdir");
    CHECK_OK(vt_store_create(empty, "", 0, &s));
    if (s) {
        char *m = NULL;
        size_t ml = 99;
        CHECK_OK(vt_store_manifest(s, &m, &ml, NULL));
        CHECK(m && ml == 0, "empty manifest");
        free(m);
        uint64_t c = 9;
        CHECK_OK(vt_store_step_count(s, &c));
        CHECK(c == 0, "empty store count");
        vt_store_close(s);
    }
    path_in(p, sizeof p, "no-such-run");
    CHECK(vt_store_open(p, 1, &s) == VT_ERR_IO && !s, "open of a missing store: %s", vt_errmsg());
    CHECK(vt_store_open(p, 0, &s) == VT_ERR_IO && !s, "open of a missing store (rw)");
    CHECK(!file_exists(p), "open must not create a directory");
}

static void test_order(void)
{
    char dir[512];
    path_in(dir, sizeof dir, "order");
    vt_store *s = NULL;
    CHECK_OK(vt_store_create(dir, g_manifest, strlen(g_manifest), &s));
    if (!s) return;
    vt_step_rec r;
    make_rec(&r, 1);
    CHECK(vt_store_put_step(s, &r, NULL, 0) == VT_ERR_ARG, "step 1 before step 0");
    for (uint64_t i = 0; i <= 3; i++) {
        make_rec(&r, i);
        CHECK_OK(vt_store_put_step(s, &r, (const uint8_t *)"abc", 3));
    }
    make_rec(&r, 5);
    CHECK(vt_store_put_step(s, &r, NULL, 0) == VT_ERR_ARG, "step 5 after 3");
    CHECK(strstr(vt_errmsg(), "out of order") != NULL, "message: %s", vt_errmsg());
    make_rec(&r, 3);
    CHECK(vt_store_put_step(s, &r, NULL, 0) == VT_ERR_ARG, "step 3 twice");
    make_rec(&r, 2);
    CHECK(vt_store_put_step(s, &r, NULL, 0) == VT_ERR_ARG, "step 2 again");
    make_rec(&r, 4);
    r.has_state = 2;
    CHECK(vt_store_put_step(s, &r, NULL, 0) == VT_ERR_ARG, "has_state 2");
    r.has_state = 1;
    CHECK(vt_store_put_step(s, &r, NULL, 1) == VT_ERR_ARG, "NULL log with a length");
    r.step = UINT64_MAX;
    CHECK(vt_store_put_step(s, &r, NULL, 0) == VT_ERR_ARG, "huge step");
    uint64_t c = 0;
    CHECK_OK(vt_store_step_count(s, &c));
    CHECK(c == 4, "count after refused steps: %llu", (unsigned long long)c);
    r.step = 4;
    CHECK_OK(vt_store_put_step(s, &r, NULL, 0));
    vt_step_rec back;
    CHECK_OK(vt_store_get_step(s, 4, &back));
    CHECK(rec_equal(&back, &r), "step 4 round trip");
    uint8_t *blob = NULL;
    size_t len = 7;
    CHECK_OK(vt_store_get_log(s, 4, &blob, &len));
    CHECK(blob && len == 0, "empty log");
    free(blob);
    CHECK(vt_store_get_step(s, UINT64_MAX, &back) == VT_ERR_ARG, "get huge step");
    vt_store_close(s);
}

static void random_state(float *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t bits = (uint32_t)vt_rng_next(&g_rng);
        v[i] = vt_bits_f32(bits); /* any bit pattern: NaNs with payloads, denormals, -0, inf */
    }
    if (n > 4) {
        v[0] = -0.0f;
        v[1] = INFINITY;
        v[2] = vt_bits_f32(0x7fc12345u);
        v[3] = vt_bits_f32(0x00000001u);
    }
}

static void set_ckpt_hash(const char *dir, uint64_t step, const uint8_t *file, size_t n)
{
    uint8_t h[32];
    char hex[65], sql[256], db[600];
    CHECK_OK(vt_sha256(file, n, h));
    vt_hex(h, 32, hex);
    snprintf(sql, sizeof sql, "UPDATE checkpoints SET file_hash = x'%s' WHERE step = %llu", hex,
             (unsigned long long)step);
    snprintf(db, sizeof db, "%s/run.db", dir);
    CHECK(raw_sql(db, sql) == SQLITE_OK, "update hash");
}

/* Write checkpoint bytes and record their hash, as if the trainer had written them. */
static void put_raw_ckpt(const char *dir, uint64_t step, const uint8_t *file, size_t n)
{
    char p[600];
    vt_store_checkpoint_path(dir, step, p, sizeof p);
    CHECK(write_file(p, file, n) == 0, "write");
    set_ckpt_hash(dir, step, file, n);
}

/* Hostile checkpoint bytes with a matching recorded hash: the header checks must catch them. */
static void expect_ckpt_format(vt_store *s, const char *dir, uint64_t step, const uint8_t *file, size_t n,
                               size_t expected_n, const char *what)
{
    put_raw_ckpt(dir, step, file, n);
    float *st = NULL;
    vt_err e = vt_store_get_checkpoint(s, step, expected_n, &st);
    CHECK(e == VT_ERR_FORMAT && !st, "%s: got %d (%s)", what, (int)e, vt_errmsg());
    free(st);
}

static size_t make_ckpt(uint8_t *out, size_t cap, const char *magic, uint16_t ver, uint16_t flags, uint64_t step,
                        uint64_t n, const void *raw, size_t raw_len, int content_size_flag)
{
    memcpy(out, magic, 4);
    vt_put_u16le(out + 4, ver);
    vt_put_u16le(out + 6, flags);
    vt_put_u64le(out + 8, step);
    vt_put_u64le(out + 16, n);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, content_size_flag);
    size_t z = ZSTD_compress2(cc, out + 24, cap - 24, raw, raw_len);
    ZSTD_freeCCtx(cc);
    if (ZSTD_isError(z)) return 0;
    return 24 + z;
}

static void test_checkpoints(void)
{
    char dir[512], p[600];
    vt_store *s = make_store("ckpt", dir, sizeof dir);
    if (!s) return;
    enum { N = 3000 };
    static float st[4][N];
    uint64_t steps[4] = {0, 10, 20, 30};
    for (int k = 0; k < 4; k++) {
        random_state(st[k], N);
        CHECK_OK(vt_store_put_checkpoint(s, steps[k], st[k], N, k == 3 ? 19 : 3));
    }
    /* n = 0 is a valid (empty) state. */
    CHECK_OK(vt_store_put_checkpoint(s, 40, NULL, 0, 1));
    /* Rewriting a checkpoint replaces it. */
    random_state(st[1], N);
    CHECK_OK(vt_store_put_checkpoint(s, 10, st[1], N, 1));
    uint64_t *list = NULL;
    size_t nl = 0;
    CHECK_OK(vt_store_list_checkpoints(s, &list, &nl));
    CHECK(nl == 5 && list && list[0] == 0 && list[1] == 10 && list[2] == 20 && list[3] == 30 && list[4] == 40,
          "list: %zu", nl);
    free(list);
    for (int k = 0; k < 4; k++) {
        float *back = NULL;
        CHECK_OK(vt_store_get_checkpoint(s, steps[k], N, &back));
        CHECK(back && !memcmp(back, st[k], sizeof st[k]), "checkpoint %d not bit-exact", k);
        free(back);
    }
    float *back = NULL;
    CHECK_OK(vt_store_get_checkpoint(s, 40, 0, &back));
    free(back);
    CHECK(vt_store_get_checkpoint(s, 5, N, &back) == VT_ERR_ARG && !back, "no checkpoint at 5");
    CHECK(vt_store_put_checkpoint(s, 1, st[0], N, 1000) == VT_ERR_ARG, "bad zstd level");

    /* File layout: header fields. */
    vt_store_checkpoint_path(dir, 20, p, sizeof p);
    size_t flen = 0;
    uint8_t *file = read_file(p, &flen);
    CHECK(file && flen > 24 && !memcmp(file, "VTCK", 4) && vt_get_u16le(file + 4) == 1 &&
              vt_get_u16le(file + 6) == 0 && vt_get_u64le(file + 8) == 20 && vt_get_u64le(file + 16) == N,
          "checkpoint header");
    CHECK(file && ZSTD_getFrameContentSize(file + 24, flen - 24) == (unsigned long long)N * 4, "frame size");

    /* Wrong expected_n. */
    CHECK(vt_store_get_checkpoint(s, 20, N - 1, &back) == VT_ERR_FORMAT && !back, "expected_n - 1: %s", vt_errmsg());
    CHECK(vt_store_get_checkpoint(s, 20, N + 1, &back) == VT_ERR_FORMAT && !back, "expected_n + 1");
    CHECK(vt_store_get_checkpoint(s, 20, 0, &back) != VT_OK && !back, "expected_n 0");

    /* Every flipped byte position class: header, frame start, middle, last byte. */
    if (file) {
        size_t pos[] = {0, 5, 9, 17, 24, 30, flen / 2, flen - 1};
        for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
            uint8_t *bad = malloc(flen);
            memcpy(bad, file, flen);
            bad[pos[i]] ^= 0x10;
            CHECK(write_file(p, bad, flen) == 0, "write");
            vt_err e = vt_store_get_checkpoint(s, 20, N, &back);
            /* a damaged header or frame header is unreadable (FORMAT); damage inside the data of a
             * well-formed file is an alteration (MISMATCH with the recorded hash) */
            int in_data = pos[i] >= flen / 2;
            CHECK((in_data ? e == VT_ERR_MISMATCH : (e == VT_ERR_FORMAT || e == VT_ERR_MISMATCH)) && !back,
                  "flip at %zu: %d", pos[i], (int)e);
            CHECK(!in_data || strstr(vt_errmsg(), "checkpoint 20 does not match its recorded hash"), "msg: %s",
                  vt_errmsg());
            free(bad);
        }
        /* Truncations and an extra byte. */
        size_t lens[] = {0, 1, 23, 24, 25, flen / 2, flen - 1};
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
            CHECK(write_file(p, file, lens[i]) == 0, "write");
            vt_err e = vt_store_get_checkpoint(s, 20, N, &back);
            CHECK(e == VT_ERR_FORMAT && !back, "truncated to %zu: %d", lens[i], (int)e);
        }
        uint8_t *longer = malloc(flen + 1);
        memcpy(longer, file, flen);
        longer[flen] = 0;
        CHECK(write_file(p, longer, flen + 1) == 0, "write");
        CHECK(vt_store_get_checkpoint(s, 20, N, &back) == VT_ERR_FORMAT, "extra byte");
        free(longer);
        /* A huge file (larger than any valid checkpoint of N values). */
        size_t hl = 24 + ZSTD_compressBound(N * 4) + 100;
        uint8_t *huge = calloc(1, hl);
        CHECK(write_file(p, huge, hl) == 0, "write");
        CHECK(vt_store_get_checkpoint(s, 20, N, &back) == VT_ERR_FORMAT, "huge file");
        free(huge);
        /* Restored: reads again. */
        CHECK(write_file(p, file, flen) == 0, "restore");
        CHECK_OK(vt_store_get_checkpoint(s, 20, N, &back));
        CHECK(back && !memcmp(back, st[2], sizeof st[2]), "restored checkpoint");
        free(back);
        back = NULL;
    }

    /* Deleted file. */
    vt_store_checkpoint_path(dir, 30, p, sizeof p);
    CHECK(unlink(p) == 0, "unlink");
    CHECK(vt_store_get_checkpoint(s, 30, N, &back) == VT_ERR_IO && !back, "deleted: %s", vt_errmsg());

    /* Hostile contents whose hash is recorded: the header and frame checks. */
    {
        size_t cap = 24 + ZSTD_compressBound(N * 4 + 64) + 64;
        uint8_t *h = malloc(cap);
        static float raw[N + 16];
        memcpy(raw, st[3], sizeof st[3]);
        size_t n;
        n = make_ckpt(h, cap, "VTCK", 1, 0, 30, N, raw, N * 4, 1);
        put_raw_ckpt(dir, 30, h, n);
        float *ok = NULL;
        CHECK_OK(vt_store_get_checkpoint(s, 30, N, &ok)); /* sanity: the crafted valid file reads */
        CHECK(ok && !memcmp(ok, st[3], sizeof st[3]), "crafted valid checkpoint");
        free(ok);
        n = make_ckpt(h, cap, "VTCX", 1, 0, 30, N, raw, N * 4, 1);
        expect_ckpt_format(s, dir, 30, h, n, N, "bad magic");
        n = make_ckpt(h, cap, "VTCK", 2, 0, 30, N, raw, N * 4, 1);
        expect_ckpt_format(s, dir, 30, h, n, N, "version 2");
        n = make_ckpt(h, cap, "VTCK", 1, 1, 30, N, raw, N * 4, 1);
        expect_ckpt_format(s, dir, 30, h, n, N, "flags 1");
        n = make_ckpt(h, cap, "VTCK", 1, 0, 20, N, raw, N * 4, 1);
        expect_ckpt_format(s, dir, 30, h, n, N, "wrong step");
        n = make_ckpt(h, cap, "VTCK", 1, 0, 30, N + 1, raw, N * 4, 1);
        expect_ckpt_format(s, dir, 30, h, n, N, "header n != expected");
        n = make_ckpt(h, cap, "VTCK", 1, 0, 30, N, raw, N * 4 + 4, 1);
        expect_ckpt_format(s, dir, 30, h, n, N, "frame content size too large");
        n = make_ckpt(h, cap, "VTCK", 1, 0, 30, N, raw, N * 4 - 4, 1);
        expect_ckpt_format(s, dir, 30, h, n, N, "frame content size too small");
        n = make_ckpt(h, cap, "VTCK", 1, 0, 30, N, raw, N * 4, 0);
        expect_ckpt_format(s, dir, 30, h, n, N, "no declared content size");
        n = make_ckpt(h, cap, "VTCK", 1, 0, 30, N, raw, N * 4, 1);
        h[n] = 0x00;
        expect_ckpt_format(s, dir, 30, h, n + 1, N, "trailing byte");
        expect_ckpt_format(s, dir, 30, h, n - 1, N, "truncated frame");
        expect_ckpt_format(s, dir, 30, h, 24, N, "header only");
        expect_ckpt_format(s, dir, 30, h, 20, N, "short header");
        /* A second frame after the first. */
        n = make_ckpt(h, cap, "VTCK", 1, 0, 30, N, raw, N * 4, 1);
        {
            uint8_t small[64];
            size_t z = ZSTD_compress(small, sizeof small, raw, 4, 1);
            CHECK(!ZSTD_isError(z), "compress");
            memcpy(h + n, small, z);
            expect_ckpt_format(s, dir, 30, h, n + z, N, "two frames");
        }
        /* A skippable frame in place of the data. */
        n = make_ckpt(h, cap, "VTCK", 1, 0, 30, 0, raw, 0, 1);
        vt_put_u32le(h + 24, 0x184D2A50u);
        vt_put_u32le(h + 28, 0);
        expect_ckpt_format(s, dir, 30, h, 32, 0, "skippable frame");
        /* Garbage after a valid header, corrupted compressed block. */
        n = make_ckpt(h, cap, "VTCK", 1, 0, 30, N, raw, N * 4, 1);
        /* A reserved block type in the first block header (after the frame header). */
        {
            uint8_t fhd = h[24 + 4];
            int single = (fhd >> 5) & 1, fcs = fhd >> 6;
            static const int did_len[4] = {0, 1, 2, 4};
            static const int fcs_len[4] = {0, 2, 4, 8};
            size_t off = 24 + 4 + 1 + (size_t)(single ? 0 : 1) + (size_t)did_len[fhd & 3] +
                         (size_t)(fcs == 0 ? single : fcs_len[fcs]);
            CHECK(off < n, "block header offset");
            h[off] |= 0x06;
            expect_ckpt_format(s, dir, 30, h, n, N, "reserved zstd block type");
        }
        /* The n_values column disagreeing with the file. */
        n = make_ckpt(h, cap, "VTCK", 1, 0, 30, N, raw, N * 4, 1);
        {
            char db[600];
            put_raw_ckpt(dir, 30, h, n);
            snprintf(db, sizeof db, "%s/run.db", dir);
            CHECK(raw_sql(db, "UPDATE checkpoints SET n_values = 7 WHERE step = 30") == SQLITE_OK, "sql");
            float *bk = NULL;
            CHECK(vt_store_get_checkpoint(s, 30, N, &bk) == VT_ERR_FORMAT && !bk, "n_values column");
            CHECK(raw_sql(db, "UPDATE checkpoints SET file_hash = x'00' WHERE step = 30") == SQLITE_OK, "sql");
            CHECK(vt_store_get_checkpoint(s, 30, N, &bk) == VT_ERR_FORMAT && !bk, "short file_hash: %s",
                  vt_errmsg());
            CHECK(raw_sql(db, "UPDATE checkpoints SET file_hash = 'abc' WHERE step = 30") == SQLITE_OK, "sql");
            CHECK(vt_store_get_checkpoint(s, 30, N, &bk) == VT_ERR_FORMAT && !bk, "text file_hash");
        }
        free(h);
    }
    free(file);

    /* Truncate: steps > 25 and checkpoints > 25 (with their files) go. */
    CHECK_OK(vt_store_truncate(s, 25));
    uint64_t c = 0;
    CHECK_OK(vt_store_step_count(s, &c));
    CHECK(c == 26, "count after truncate: %llu", (unsigned long long)c);
    CHECK_OK(vt_store_list_checkpoints(s, &list, &nl));
    CHECK(nl == 3 && list && list[2] == 20, "checkpoints after truncate: %zu", nl);
    free(list);
    vt_store_checkpoint_path(dir, 40, p, sizeof p);
    CHECK(!file_exists(p), "checkpoint 40 file deleted");
    vt_store_checkpoint_path(dir, 20, p, sizeof p);
    CHECK(file_exists(p), "checkpoint 20 file kept");
    vt_step_rec r;
    CHECK(vt_store_get_step(s, 26, &r) == VT_ERR_ARG, "step 26 gone");
    CHECK_OK(vt_store_get_step(s, 25, &r));
    CHECK(rec_equal(&r, &g_recs[25]), "step 25 kept");
    make_rec(&r, 27);
    CHECK(vt_store_put_step(s, &r, NULL, 0) == VT_ERR_ARG, "27 after truncate to 25");
    make_rec(&r, 26);
    CHECK_OK(vt_store_put_step(s, &r, NULL, 0));
    CHECK_OK(vt_store_truncate(s, 1000)); /* no-op */
    CHECK_OK(vt_store_step_count(s, &c));
    CHECK(c == 27, "count after no-op truncate");
    CHECK_OK(vt_store_truncate(s, 0));
    CHECK_OK(vt_store_step_count(s, &c));
    CHECK(c == 1, "count after truncate to 0");
    CHECK_OK(vt_store_list_checkpoints(s, &list, &nl));
    CHECK(nl == 1 && list && list[0] == 0, "only checkpoint 0 left");
    free(list);
    vt_store_close(s);

    /* A read-only open can read checkpoints. */
    CHECK_OK(vt_store_open(dir, 1, &s));
    if (s) {
        CHECK_OK(vt_store_get_checkpoint(s, 0, N, &back));
        CHECK(back && !memcmp(back, st[0], sizeof st[0]), "read-only checkpoint");
        free(back);
        vt_store_close(s);
    }
}

static void test_commitment(void)
{
    char p[512];
    path_in(p, sizeof p, "c.vtc");
    vt_commitment c, d;
    memset(&c, 0, sizeof c);
    c.version = 1;
    fill_hash(c.manifest_hash);
    c.step_count = 0x0102030405060708ULL;
    fill_hash(c.root);
    fill_hash(c.public_key);
    for (int i = 0; i < 64; i++) c.signature[i] = (uint8_t)vt_rng_next(&g_rng);
    CHECK_OK(vt_commitment_write(p, &c));
    CHECK_OK(vt_commitment_read(p, &d));
    CHECK(!memcmp(&c, &d, sizeof c), "commitment round trip");
    size_t n = 0;
    uint8_t *f = read_file(p, &n);
    CHECK(f && n == VT_COMMITMENT_FILE_LEN && n == 176, "file length %zu", n);
    uint8_t body[VT_COMMITMENT_BODY_LEN];
    vt_commitment_body(&c, body);
    CHECK(f && !memcmp(f, body, 112) && !memcmp(f + 112, c.signature, 64), "file = body || signature");
    CHECK(!memcmp(body, "VTCM", 4) && vt_get_u32le(body + 4) == 1 && !memcmp(body + 8, c.manifest_hash, 32) &&
              vt_get_u64le(body + 40) == c.step_count && !memcmp(body + 48, c.root, 32) &&
              !memcmp(body + 80, c.public_key, 32),
          "body layout");
    char path_buf[64];
    vt_store_commitment_path("/r", path_buf, sizeof path_buf);
    CHECK(!strcmp(path_buf, "/r/commitment.vtc"), "commitment path %s", path_buf);
    vt_store_checkpoint_path("/r", 42, path_buf, sizeof path_buf);
    CHECK(!strcmp(path_buf, "/r/checkpoints/ckpt-000000000042.vtck"), "checkpoint path %s", path_buf);

    if (f) {
        char q[512];
        path_in(q, sizeof q, "bad.vtc");
        for (size_t len = 0; len < n; len++) {
            CHECK(write_file(q, f, len) == 0, "write");
            vt_err e = vt_commitment_read(q, &d);
            CHECK(e == VT_ERR_FORMAT, "truncated to %zu: %d", len, (int)e);
        }
        uint8_t big[177];
        memcpy(big, f, 176);
        big[176] = 0;
        CHECK(write_file(q, big, 177) == 0, "write");
        CHECK(vt_commitment_read(q, &d) == VT_ERR_FORMAT, "one extra byte");
        memcpy(big, f, 176);
        big[0] = 'X';
        CHECK(write_file(q, big, 176) == 0, "write");
        CHECK(vt_commitment_read(q, &d) == VT_ERR_FORMAT, "bad magic");
        memcpy(big, f, 176);
        vt_put_u32le(big + 4, 2);
        CHECK(write_file(q, big, 176) == 0, "write");
        CHECK(vt_commitment_read(q, &d) == VT_ERR_FORMAT, "version 2");
        vt_put_u32le(big + 4, 0);
        CHECK(write_file(q, big, 176) == 0, "write");
        CHECK(vt_commitment_read(q, &d) == VT_ERR_FORMAT, "version 0");
        /* A bad signature is not this layer's business: it reads. */
        memcpy(big, f, 176);
        big[175] ^= 1;
        CHECK(write_file(q, big, 176) == 0, "write");
        CHECK_OK(vt_commitment_read(q, &d));
        path_in(q, sizeof q, "missing.vtc");
        CHECK(vt_commitment_read(q, &d) == VT_ERR_IO, "missing file");
        CHECK(vt_commitment_read(g_root, &d) != VT_OK, "a directory");
    }
    free(f);
    c.version = 2;
    CHECK(vt_commitment_write(p, &c) == VT_ERR_ARG, "writing version 2");
    /* Overwriting is atomic and leaves no temp file. */
    c.version = 1;
    c.step_count = 7;
    CHECK_OK(vt_commitment_write(p, &c));
    CHECK_OK(vt_commitment_read(p, &d));
    CHECK(d.step_count == 7, "overwrite");
}

/* Records that both sides of a fork can compute from the step number alone. */
static void det_rec(vt_step_rec *r, uint64_t step)
{
    memset(r, 0, sizeof *r);
    r->step = step;
    r->loss_bits = (uint32_t)(step * 2654435761u);
    r->has_state = (int)(step & 1);
    for (int i = 0; i < 32; i++) {
        r->state_hash[i] = (uint8_t)(step + i);
        r->log_hash[i] = (uint8_t)(step * 7 + i);
        r->leaf[i] = (uint8_t)(step * 13 + i);
    }
    r->log_entries = step * 3;
}

/* kill -9 right after vt_store_put_step returned: the step must survive (WAL recovery). */
static void test_crash(void)
{
    char dir[512];
    path_in(dir, sizeof dir, "crash");
    int fds[2];
    if (pipe(fds) != 0) {
        CHECK(0, "pipe");
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        CHECK(0, "fork");
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        vt_store *s = NULL;
        if (vt_store_create(dir, "m", 1, &s)) _exit(2);
        for (uint64_t i = 0;; i++) {
            vt_step_rec r;
            det_rec(&r, i);
            uint8_t log[100];
            memset(log, (int)(i & 0xff), sizeof log);
            if (vt_store_put_step(s, &r, log, sizeof log)) _exit(3);
            if (write(fds[1], &i, sizeof i) != (ssize_t)sizeof i) _exit(4);
        }
    }
    close(fds[1]);
    uint64_t last = 0, v;
    int got = 0;
    while (got < 12 && read(fds[0], &v, sizeof v) == (ssize_t)sizeof v) {
        last = v;
        got++;
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    while (read(fds[0], &v, sizeof v) == (ssize_t)sizeof v) last = v; /* reported before the kill */
    close(fds[0]);
    CHECK(got == 12 && WIFSIGNALED(status), "child: got %d, status %d", got, status);
    char wal[600];
    snprintf(wal, sizeof wal, "%s/run.db-wal", dir);
    CHECK(file_exists(wal), "the killed writer left its WAL (the steps are only there)");
    for (int ro = 1; ro >= 0; ro--) {
        vt_store *s = NULL;
        CHECK_OK(vt_store_open(dir, ro, &s));
        if (!s) continue;
        uint64_t count = 0;
        CHECK_OK(vt_store_step_count(s, &count));
        CHECK(count >= last + 1, "after kill -9 (readonly=%d): %llu steps, step %llu had been reported stored", ro,
              (unsigned long long)count, (unsigned long long)last);
        for (uint64_t i = 0; i < count; i++) {
            vt_step_rec r, want;
            det_rec(&want, i);
            CHECK_OK(vt_store_get_step(s, i, &r));
            CHECK(rec_equal(&r, &want), "step %llu after kill -9", (unsigned long long)i);
        }
        if (!ro) {
            vt_step_rec r;
            det_rec(&r, count);
            CHECK_OK(vt_store_put_step(s, &r, NULL, 0));
        }
        vt_store_close(s);
    }
}

/* An auditor reading while the trainer writes (WAL: readers see each committed step). */
static void test_concurrent(void)
{
    char dir[512];
    path_in(dir, sizeof dir, "conc");
    vt_store *w = NULL, *r = NULL;
    CHECK_OK(vt_store_create(dir, "m", 1, &w));
    if (!w) return;
    vt_step_rec rec, back;
    for (uint64_t i = 0; i < 3; i++) {
        det_rec(&rec, i);
        CHECK_OK(vt_store_put_step(w, &rec, NULL, 0));
    }
    CHECK_OK(vt_store_open(dir, 1, &r));
    if (r) {
        uint64_t c = 0;
        CHECK_OK(vt_store_step_count(r, &c));
        CHECK(c == 3, "reader sees 3 steps: %llu", (unsigned long long)c);
        det_rec(&rec, 3);
        CHECK_OK(vt_store_put_step(w, &rec, NULL, 0));
        CHECK_OK(vt_store_step_count(r, &c));
        CHECK(c == 4, "reader sees the new step: %llu", (unsigned long long)c);
        CHECK_OK(vt_store_get_step(r, 3, &back));
        CHECK(rec_equal(&back, &rec), "reader reads the new step");
        float x[3] = {1, 2, 3};
        CHECK_OK(vt_store_put_checkpoint(w, 3, x, 3, 1));
        float *y = NULL;
        CHECK_OK(vt_store_get_checkpoint(r, 3, 3, &y));
        CHECK(y && !memcmp(x, y, sizeof x), "reader reads the new checkpoint");
        free(y);
        vt_store_close(w); /* with a reader open: must neither block nor fail */
        w = NULL;
        CHECK_OK(vt_store_step_count(r, &c));
        CHECK(c == 4, "reader after the writer closed");
        vt_store_close(r);
    }
    vt_store_close(w);
    CHECK_OK(vt_store_open(dir, 1, &r));
    if (r) {
        uint64_t c = 0;
        CHECK_OK(vt_store_step_count(r, &c));
        CHECK(c == 4, "reopened: %llu", (unsigned long long)c);
        vt_store_close(r);
    }
}

/* ------------------------------------------------------------------ hostile run.db */

static int clean_err(vt_err e)
{
    return e == VT_ERR_FORMAT || e == VT_ERR_DB || e == VT_ERR_IO || e == VT_ERR_MISMATCH || e == VT_ERR_ARG ||
           e == VT_ERR_LIMIT;
}

/* Open a store whose run.db holds the given bytes; if it opens, read everything. Never a crash;
 * returns the open result. */
static vt_err try_hostile(const uint8_t *db, size_t n, int readonly, int *reads_failed)
{
    char dir[512], p[600];
    path_in(dir, sizeof dir, "hostile");
    rm_rf(dir);
    mkdir(dir, 0777);
    snprintf(p, sizeof p, "%s/run.db", dir);
    write_file(p, db, n);
    vt_store *s = NULL;
    vt_err e = vt_store_open(dir, readonly, &s);
    if (reads_failed) *reads_failed = 0;
    if (e) {
        CHECK(!s && clean_err(e), "open error %d", (int)e);
        CHECK(strlen(vt_errmsg()) > 10, "message");
        return e;
    }
    uint64_t count = 0;
    vt_err r = vt_store_step_count(s, &count);
    int failed = r != VT_OK;
    CHECK(r == VT_OK || clean_err(r), "count error %d", (int)r);
    if (r) count = NSTEPS;
    if (count > NSTEPS + 10) count = NSTEPS + 10;
    for (uint64_t i = 0; i < count; i++) {
        vt_step_rec rec;
        r = vt_store_get_step(s, i, &rec);
        CHECK(r == VT_OK || clean_err(r), "get_step error %d", (int)r);
        failed |= r != VT_OK;
        uint8_t *blob = NULL;
        size_t len = 0;
        r = vt_store_get_log(s, i, &blob, &len);
        CHECK(r == VT_OK || clean_err(r), "get_log error %d", (int)r);
        failed |= r != VT_OK;
        free(blob);
    }
    char *m = NULL;
    size_t ml = 0;
    r = vt_store_manifest(s, &m, &ml, NULL);
    CHECK(r == VT_OK || clean_err(r), "manifest error %d", (int)r);
    failed |= r != VT_OK;
    free(m);
    uint64_t *list = NULL;
    size_t nl = 0;
    r = vt_store_list_checkpoints(s, &list, &nl);
    CHECK(r == VT_OK || clean_err(r), "list error %d", (int)r);
    failed |= r != VT_OK;
    free(list);
    if (!readonly) {
        vt_step_rec rec;
        make_rec(&rec, count);
        r = vt_store_put_step(s, &rec, NULL, 0);
        CHECK(r == VT_OK || clean_err(r), "put error %d", (int)r);
    }
    vt_store_close(s);
    if (reads_failed) *reads_failed = failed;
    return VT_OK;
}

static void expect_open_fails(const uint8_t *db, size_t n, vt_err want, const char *needle, const char *what)
{
    for (int ro = 0; ro <= 1; ro++) {
        vt_err e = try_hostile(db, n, ro, NULL);
        CHECK(e == want, "%s (readonly=%d): got %d: %s", what, ro, (int)e, vt_errmsg());
        CHECK(!needle || strstr(vt_errmsg(), needle), "%s: message '%s' lacks '%s'", what, vt_errmsg(), needle);
    }
}

/* A finished store's run.db, built once; altered copies are made from it. */
static uint8_t *g_base;
static size_t g_base_len;

static void build_base(void)
{
    char dir[512], p[600];
    vt_store *s = make_store("base", dir, sizeof dir);
    if (!s) return;
    for (uint64_t k = 0; k < NSTEPS; k += 20) {
        float v[64];
        random_state(v, 64);
        CHECK_OK(vt_store_put_checkpoint(s, k, v, 64, 3));
    }
    vt_store_close(s);
    snprintf(p, sizeof p, "%s/run.db", dir);
    g_base = read_file(p, &g_base_len);
    CHECK(g_base != NULL, "read base store");
}

/* A copy of the base store altered with SQL: its run.db bytes. */
static uint8_t *altered_store(const char *sql, size_t *n)
{
    char dir[512], p[600];
    path_in(dir, sizeof dir, "alter");
    rm_rf(dir);
    mkdir(dir, 0777);
    snprintf(p, sizeof p, "%s/run.db", dir);
    if (!g_base || write_file(p, g_base, g_base_len) != 0) return NULL;
    if (sql) CHECK(raw_sql(p, sql) == SQLITE_OK, "alter: %s", sql);
    return read_file(p, n);
}

/* Open succeeds, but reading the altered step fails with VT_ERR_FORMAT. */
static void expect_read_fails(const char *sql, uint64_t step, int which, const char *what)
{
    size_t n = 0;
    uint8_t *db = altered_store(sql, &n);
    if (!db) return;
    char dir[512], p[600];
    path_in(dir, sizeof dir, "hostile");
    rm_rf(dir);
    mkdir(dir, 0777);
    snprintf(p, sizeof p, "%s/run.db", dir);
    write_file(p, db, n);
    free(db);
    vt_store *s = NULL;
    CHECK_OK(vt_store_open(dir, 1, &s));
    if (!s) return;
    vt_err e;
    if (which == 0) {
        vt_step_rec r;
        e = vt_store_get_step(s, step, &r);
    } else if (which == 1) {
        uint8_t *b = NULL;
        size_t l = 0;
        e = vt_store_get_log(s, step, &b, &l);
        CHECK(!b, "no blob on failure");
        free(b);
    } else {
        uint64_t c;
        e = vt_store_step_count(s, &c);
    }
    CHECK(e == VT_ERR_FORMAT, "%s: got %d: %s", what, (int)e, vt_errmsg());
    char needle[32];
    snprintf(needle, sizeof needle, "step %llu", (unsigned long long)step);
    CHECK(which == 2 || strstr(vt_errmsg(), needle), "%s: message '%s' does not name the step", what, vt_errmsg());
    vt_store_close(s);
}

static void test_hostile_db(void)
{
    build_base();
    /* Garbage, empty, text, a directory in place of run.db. */
    uint8_t garbage[8192];
    for (size_t i = 0; i < sizeof garbage; i++) garbage[i] = (uint8_t)vt_rng_next(&g_rng);
    expect_open_fails(garbage, sizeof garbage, VT_ERR_FORMAT, "not a run store", "garbage");
    expect_open_fails(garbage, 0, VT_ERR_FORMAT, "not a run store", "empty file");
    expect_open_fails((const uint8_t *)"hello world\n", 12, VT_ERR_FORMAT, "not a run store", "text file");
    /* A valid SQLite header followed by garbage. */
    memcpy(garbage, "SQLite format 3", 16);
    expect_open_fails(garbage, sizeof garbage, VT_ERR_FORMAT, NULL, "SQLite magic + garbage");
    {
        char dir[512], p[600];
        path_in(dir, sizeof dir, "dir-db");
        mkdir(dir, 0777);
        snprintf(p, sizeof p, "%s/run.db", dir);
        mkdir(p, 0777);
        vt_store *s = NULL;
        CHECK(vt_store_open(dir, 1, &s) == VT_ERR_FORMAT && !s, "run.db is a directory");
    }

    /* Other schemas. */
    size_t n = 0;
    uint8_t *db;
    db = altered_store("DROP TABLE steps; DROP TABLE checkpoints; DROP TABLE meta; CREATE TABLE foo(x);", &n);
    expect_open_fails(db, n, VT_ERR_FORMAT, "not a run store", "another schema");
    free(db);
    db = altered_store("DROP TABLE steps;", &n);
    expect_open_fails(db, n, VT_ERR_FORMAT, "not a run store", "no steps table");
    free(db);
    db = altered_store("UPDATE meta SET value = 2 WHERE key = 'schema_version'", &n);
    expect_open_fails(db, n, VT_ERR_FORMAT, "schema version 2 not supported", "schema version 2");
    free(db);
    db = altered_store("UPDATE meta SET value = '1' WHERE key = 'schema_version'", &n);
    expect_open_fails(db, n, VT_ERR_FORMAT, "schema_version", "text schema version");
    free(db);
    db = altered_store("DELETE FROM meta WHERE key = 'schema_version'", &n);
    expect_open_fails(db, n, VT_ERR_FORMAT, "not a run store", "no schema version");
    free(db);
    db = altered_store("CREATE VIEW v AS SELECT * FROM steps", &n);
    expect_open_fails(db, n, VT_ERR_FORMAT, "not a run store", "extra view");
    free(db);
    db = altered_store("CREATE TRIGGER t AFTER INSERT ON steps BEGIN DELETE FROM meta; END", &n);
    expect_open_fails(db, n, VT_ERR_FORMAT, "not a run store", "trigger");
    free(db);
    db = altered_store("DROP TABLE steps; CREATE TABLE steps(step INTEGER PRIMARY KEY, other)", &n);
    expect_open_fails(db, n, VT_ERR_FORMAT, "not a run store", "steps without our columns");
    free(db);
    db = altered_store("UPDATE meta SET value = x'0011' WHERE key = 'manifest_hash'", &n);
    expect_open_fails(db, n, VT_ERR_FORMAT, "manifest_hash", "short manifest hash");
    free(db);
    db = altered_store("UPDATE meta SET value = CAST('{}' AS BLOB) WHERE key = 'manifest'", &n);
    expect_open_fails(db, n, VT_ERR_MISMATCH, "manifest", "altered manifest");
    free(db);
    db = altered_store("UPDATE meta SET value = 'text' WHERE key = 'manifest'", &n);
    expect_open_fails(db, n, VT_ERR_FORMAT, "manifest", "text manifest");
    free(db);

    /* Bad values inside an otherwise valid store: the read names the step. */
    expect_read_fails("UPDATE steps SET state_hash = x'00' WHERE step = 7", 7, 0, "31-byte state hash");
    expect_read_fails("UPDATE steps SET log_hash = zeroblob(33) WHERE step = 8", 8, 0, "33-byte log hash");
    expect_read_fails("UPDATE steps SET leaf = 'x' WHERE step = 9", 9, 0, "text leaf");
    expect_read_fails("UPDATE steps SET loss_bits = 4294967296 WHERE step = 10", 10, 0, "loss_bits > 32 bits");
    expect_read_fails("UPDATE steps SET loss_bits = -1 WHERE step = 11", 11, 0, "negative loss_bits");
    expect_read_fails("UPDATE steps SET loss_bits = 1.5 WHERE step = 11", 11, 0, "real loss_bits");
    expect_read_fails("UPDATE steps SET has_state = 2 WHERE step = 12", 12, 0, "has_state 2");
    expect_read_fails("UPDATE steps SET log_entries = -5 WHERE step = 13", 13, 0, "negative log_entries");
    expect_read_fails("UPDATE steps SET log = 'text' WHERE step = 14", 14, 1, "text log");
    expect_read_fails("UPDATE steps SET log = 5 WHERE step = 15", 15, 1, "integer log");
    expect_read_fails("DELETE FROM steps WHERE step = 16", 16, 0, "gap in the steps");
    expect_read_fails("DELETE FROM steps WHERE step = 0", 0, 2, "no step 0");

    /* Truncated and corrupted copies of a real store. */
    db = altered_store(NULL, &n);
    if (!db) return;
    CHECK(n > 4 * 4096, "store size %zu", n);
    int r0 = 0;
    CHECK(try_hostile(db, n, 1, &r0) == VT_OK && !r0, "the intact copy reads");
    size_t lens[] = {1, 15, 16, 50, 99, 100, 101, 512, 1024, 4095, 4096, 4097, 8192, n / 3, n / 2, n - 4096, n - 100, n - 1};
    int opened = 0, detected = 0, tried = 0;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        for (int ro = 1; ro >= (i % 3 == 0 ? 0 : 1); ro--) { /* writable opens fsync: only some */
            int failed = 0;
            vt_err e = try_hostile(db, lens[i], ro, &failed);
            tried++;
            if (!e) opened++;
            if (e || failed) detected++;
            else if (ro) printf("truncation to %zu of %zu bytes: opens and reads without an error\n", lens[i], n);
        }
    }
    printf("truncated copies: %d of %d opens succeeded, %d detected\n", opened, tried, detected);
    /* Random byte corruption: any outcome but a crash (and reads of damaged pages fail cleanly). */
    uint8_t *bad = malloc(n);
    int corrupt_detected = 0;
    for (int t = 0; t < 40; t++) {
        memcpy(bad, db, n);
        int flips = 1 + (int)(vt_rng_next(&g_rng) % 16);
        for (int k = 0; k < flips; k++) bad[vt_rng_next(&g_rng) % n] ^= (uint8_t)(1 + vt_rng_next(&g_rng) % 255);
        int failed = 0;
        vt_err e = try_hostile(bad, n, (t % 4) != 0, &failed);
        if (e || failed) corrupt_detected++;
    }
    /* Whole pages zeroed. */
    for (size_t pg = 0; pg < n / 4096; pg++) {
        memcpy(bad, db, n);
        memset(bad + pg * 4096, 0, 4096);
        int failed = 0;
        vt_err e = try_hostile(bad, n, 1, &failed);
        CHECK(e || failed || pg > 0, "zeroed page %zu went unnoticed", pg);
    }
    printf("corrupted copies: %d of 40 detected\n", corrupt_detected);
    free(bad);
    free(db);
    free(g_base);
}

int main(void)
{
    g_rng.s = vt_test_seed(20240611);
    snprintf(g_root, sizeof g_root, "%s/vt_store_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_root)) {
        perror("mkdtemp");
        return 1;
    }
    test_roundtrip();
    test_order();
    test_checkpoints();
    test_commitment();
    test_crash();
    test_concurrent();
    test_hostile_db();
    rm_rf(g_root);
    return vt_test_finish("test_store");
}
