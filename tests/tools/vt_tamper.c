/* vt_tamper - test tool that plays a dishonest trainer (or a vandal) on a finished run:
 *   vt_tamper RUN_DIR KEYFILE ACTION [ARGS]
 * Actions that a cheating trainer with the signing key would do re-commit the run (new
 * leaves, new root, new signature) so that only a replay can catch them; the others alter
 * bytes after the commitment. Prints the step it acted on. Not part of the product. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vt_bytes.h"
#include "common/vt_hash.h"
#include "merkle/vt_merkle.h"
#include "merkle/vt_sign.h"
#include "rounding/vt_round.h"
#include "store/vt_checkpoint.h"
#include "store/vt_commitment.h"

static sqlite3 *db;
static const char *run_dir, *key_path;

static void die(const char *what)
{
    fprintf(stderr, "vt_tamper: %s: %s / %s\n", what, vt_errmsg(), db ? sqlite3_errmsg(db) : "");
    exit(1);
}

static int64_t count_steps(void)
{
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM steps", -1, &st, NULL);
    int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
}

static void get_log(int64_t s, vt_steplog *l)
{
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT log FROM steps WHERE step = ?1", -1, &st, NULL);
    sqlite3_bind_int64(st, 1, s);
    if (sqlite3_step(st) != SQLITE_ROW) die("no such step");
    if (vt_steplog_decode_stored(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0), (uint64_t)s, NULL, l, NULL))
        die("decode");
    sqlite3_finalize(st);
}

static void put_log(int64_t s, const vt_steplog *l)
{
    uint8_t *blob, h[32];
    size_t n;
    if (vt_steplog_encode_stored(l, 3, &blob, &n, h)) die("encode");
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "UPDATE steps SET log = ?1, log_hash = ?2 WHERE step = ?3", -1, &st, NULL);
    static const uint8_t none = 0; /* a zero-length blob, not NULL (the column is NOT NULL) */
    sqlite3_bind_blob(st, 1, n ? (const void *)blob : (const void *)&none, (int)n, SQLITE_TRANSIENT);
    sqlite3_bind_blob(st, 2, h, 32, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, s);
    if (sqlite3_step(st) != SQLITE_DONE) die("update log");
    sqlite3_finalize(st);
    free(blob);
}

/* Recompute every leaf from its record, the root, and sign a new commitment. */
static void recommit(void)
{
    int64_t n = count_steps();
    vt_merkle t;
    vt_merkle_init(&t);
    for (int64_t s = 0; s < n; s++) {
        sqlite3_stmt *st;
        sqlite3_prepare_v2(db, "SELECT has_state, state_hash, log_hash FROM steps WHERE step = ?1", -1, &st, NULL);
        sqlite3_bind_int64(st, 1, s);
        if (sqlite3_step(st) != SQLITE_ROW) die("read step");
        uint8_t leaf[32];
        if (vt_step_leaf((uint64_t)s, sqlite3_column_blob(st, 1), sqlite3_column_int(st, 0), sqlite3_column_blob(st, 2),
                         leaf))
            die("leaf");
        sqlite3_finalize(st);
        sqlite3_prepare_v2(db, "UPDATE steps SET leaf = ?1 WHERE step = ?2", -1, &st, NULL);
        sqlite3_bind_blob(st, 1, leaf, 32, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, s);
        if (sqlite3_step(st) != SQLITE_DONE) die("update leaf");
        sqlite3_finalize(st);
        if (vt_merkle_append(&t, leaf)) die("append");
    }
    vt_commitment c;
    char path[4096];
    vt_store_commitment_path(run_dir, path, sizeof path);
    if (vt_commitment_read(path, &c)) die("commitment");
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'manifest_hash'", -1, &st, NULL);
    if (sqlite3_step(st) != SQLITE_ROW) die("manifest hash");
    memcpy(c.manifest_hash, sqlite3_column_blob(st, 0), 32);
    sqlite3_finalize(st);
    c.step_count = (uint64_t)n;
    if (vt_merkle_root(&t, c.root)) die("root");
    vt_merkle_free(&t);
    vt_keypair kp;
    if (vt_sign_init() || vt_sign_read_secret_key(key_path, &kp)) die("key");
    memcpy(c.public_key, kp.pk, 32);
    uint8_t body[VT_COMMITMENT_BODY_LEN];
    vt_commitment_body(&c, body);
    if (vt_sign_detached(&kp, body, sizeof body, c.signature)) die("sign");
    if (vt_commitment_write(path, &c)) die("write commitment");
}

/* The step whose log has the most entries (of the given kind: 0 direction, 1 any). */
static int64_t busiest_step(int direction_only)
{
    int64_t best = -1, n = count_steps();
    uint64_t most = 0;
    for (int64_t s = 1; s < n; s++) {
        vt_steplog l;
        vt_steplog_init(&l, 0);
        get_log(s, &l);
        uint64_t c = 0;
        for (uint32_t i = 0; i < l.n_ops; i++)
            for (uint64_t k = 0; k < l.ops[i].n_entries; k++) c += !direction_only || !l.ops[i].e[k].is_value;
        if (c > most) most = c, best = s;
        vt_steplog_free(&l);
    }
    if (best < 0) {
        fprintf(stderr, "vt_tamper: the run has no log entries to tamper with\n");
        exit(1);
    }
    return best;
}

/* Stores a new manifest text (len bytes) and its SHA-256 as the recorded manifest hash. */
static void store_manifest(const char *out, size_t len)
{
    sqlite3_stmt *st;
    uint8_t h[32];
    if (vt_sha256(out, len, h)) die("hash");
    sqlite3_prepare_v2(db, "UPDATE meta SET value = ?1 WHERE key = 'manifest'", -1, &st, NULL);
    sqlite3_bind_blob(st, 1, out, (int)len, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE) die("update manifest");
    sqlite3_finalize(st);
    sqlite3_prepare_v2(db, "UPDATE meta SET value = ?1 WHERE key = 'manifest_hash'", -1, &st, NULL);
    sqlite3_bind_blob(st, 1, h, 32, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE) die("update manifest hash");
    sqlite3_finalize(st);
}

/* Replace the manifest text (e.g. the learning rate) and its recorded hash. */
static void edit_manifest_to(const char *from_key, const char *new_value, const char *stops);
static void edit_manifest(const char *from_key, const char *new_value) { edit_manifest_to(from_key, new_value, ",}"); }

static void edit_manifest_to(const char *from_key, const char *new_value, const char *stops)
{
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'manifest'", -1, &st, NULL);
    if (sqlite3_step(st) != SQLITE_ROW) die("manifest");
    const char *m = (const char *)sqlite3_column_blob(st, 0);
    size_t n = (size_t)sqlite3_column_bytes(st, 0);
    char *text = malloc(n + 256), *out = malloc(n + 256);
    memcpy(text, m, n);
    text[n] = 0;
    sqlite3_finalize(st);
    char *p = strstr(text, from_key);
    if (!p) die("manifest key");
    char *v = p + strlen(from_key), *end = v;
    while (*end && !strchr(stops, *end)) end++;
    if (*end == ']') end++;
    size_t pre = (size_t)(v - text);
    memcpy(out, text, pre);
    size_t len = (size_t)sprintf(out + pre, "%s%s", new_value, end);
    len += pre;
    store_manifest(out, len);
    free(text);
    free(out);
}

/* Replace the first occurrence of OLD in the manifest text by NEW and update its recorded hash. */
static void replace_manifest(const char *old, const char *new_text)
{
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'manifest'", -1, &st, NULL);
    if (sqlite3_step(st) != SQLITE_ROW) die("manifest");
    size_t n = (size_t)sqlite3_column_bytes(st, 0), lo = strlen(old), ln = strlen(new_text);
    char *text = malloc(n + 1), *out = malloc(n + ln + 1);
    memcpy(text, sqlite3_column_blob(st, 0), n);
    text[n] = 0;
    sqlite3_finalize(st);
    char *p = strstr(text, old);
    if (!p) die("manifest text not found");
    size_t pre = (size_t)(p - text), len = pre + ln + (n - pre - lo);
    memcpy(out, text, pre);
    memcpy(out + pre, new_text, ln);
    memcpy(out + pre + ln, p + lo, n - pre - lo);
    store_manifest(out, len);
    free(text);
    free(out);
}

static void flip_file_bit(const char *path, long off_from_end_ratio_num)
{
    FILE *f = fopen(path, "r+b");
    if (!f) die(path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f), off = size * off_from_end_ratio_num / 100;
    fseek(f, off, SEEK_SET);
    int c = fgetc(f);
    fseek(f, off, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: vt_tamper RUN_DIR KEYFILE ACTION [ARGS]\n");
        return 64;
    }
    run_dir = argv[1], key_path = argv[2];
    const char *act = argv[3];
    int64_t s = argc > 4 ? atoll(argv[4]) : -1;
    char path[4096];
    snprintf(path, sizeof path, "%s/run.db", run_dir);
    if (sqlite3_open(path, &db) != SQLITE_OK) die("open");

    if (strcmp(act, "flip-checkpoint") == 0) {
        vt_store_checkpoint_path(run_dir, (uint64_t)s, path, sizeof path);
        flip_file_bit(path, 60);
    } else if (strcmp(act, "flip-state-hash") == 0) {
        sqlite3_stmt *st;
        sqlite3_prepare_v2(db, "SELECT state_hash FROM steps WHERE step = ?1", -1, &st, NULL);
        sqlite3_bind_int64(st, 1, s);
        if (sqlite3_step(st) != SQLITE_ROW) die("step");
        uint8_t h[32];
        memcpy(h, sqlite3_column_blob(st, 0), 32);
        sqlite3_finalize(st);
        h[7] ^= 4;
        sqlite3_prepare_v2(db, "UPDATE steps SET state_hash = ?1 WHERE step = ?2", -1, &st, NULL);
        sqlite3_bind_blob(st, 1, h, 32, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, s);
        if (sqlite3_step(st) != SQLITE_DONE) die("update");
        sqlite3_finalize(st);
    } else if (strcmp(act, "flip-signature") == 0) {
        vt_store_commitment_path(run_dir, path, sizeof path);
        flip_file_bit(path, 80);
    } else if (strcmp(act, "flip-direction") == 0 || strcmp(act, "delete-entries") == 0) {
        /* every direction bit flipped / every entry deleted, in every step (a single one may
         * happen not to change any stored value); the auditor must name the first step where
         * the tampering changed the state */
        int del = act[0] == 'd';
        s = busiest_step(!del);
        for (int64_t t = 1; t < count_steps(); t++) {
            vt_steplog l;
            vt_steplog_init(&l, 0);
            get_log(t, &l);
            for (uint32_t i = 0; i < l.n_ops; i++) {
                if (del) l.ops[i].n_entries = 0;
                for (uint64_t k = 0; k < l.ops[i].n_entries; k++)
                    if (!l.ops[i].e[k].is_value) l.ops[i].e[k].up ^= 1;
            }
            put_log(t, &l);
            vt_steplog_free(&l);
        }
        recommit();
    } else if (strcmp(act, "add-entry") == 0) { /* a forged value entry, far from the exact value */
        vt_steplog l;
        vt_steplog_init(&l, 0);
        get_log(s, &l);
        vt_oplog *o;
        if (l.n_ops == 0) { /* an exact-rounding run: no log at all; smuggle a record in */
            if (vt_steplog_add_op(&l, 2, 1, &o)) die("add op");
        } else {
            o = &l.ops[1]; /* operation 2: layer 1 bias add, exact (bound 0) */
        }
        vt_log_entry e = {0, vt_f32_bits(12345.0f), 1, 0};
        if (o->n_entries) die("op 2 has entries");
        if (vt_oplog_push(o, e)) die("push");
        put_log(s, &l);
        vt_steplog_free(&l);
        recommit();
    } else if (strcmp(act, "swap-logs") == 0) {
        int64_t s2 = atoll(argv[5]);
        vt_steplog a, b;
        vt_steplog_init(&a, 0);
        vt_steplog_init(&b, 0);
        get_log(s, &a);
        get_log(s2, &b);
        put_log(s, &b);
        put_log(s2, &a);
        vt_steplog_free(&a);
        vt_steplog_free(&b);
        recommit();
    } else if (strcmp(act, "other-dataset") == 0) {
        edit_manifest("\"dataset_hash\":\"", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"");
        recommit();
    } else if (strcmp(act, "set-layers-resign") == 0) { /* a hostile manifest, e.g. [784,200000,10] */
        edit_manifest_to("\"layers\":", argv[4], "]");
        recommit();
    } else if (strcmp(act, "set-format") == 0 || strcmp(act, "set-format-resign") == 0) {
        /* relabel the run, e.g. as an older manifest format (an unfinished run: no commitment to re-sign) */
        char v[64];
        snprintf(v, sizeof v, "%s", argv[4]);
        edit_manifest_to("\"format\":\"", v, "\"");
        if (strcmp(act, "set-format-resign") == 0) recommit();
    } else if (strcmp(act, "set-lr") == 0 || strcmp(act, "set-lr-resign") == 0) {
        edit_manifest("\"lr\":", argv[4]);
        if (strcmp(act, "set-lr-resign") == 0) recommit();
    } else if (strcmp(act, "replace") == 0 || strcmp(act, "replace-resign") == 0) {
        /* replace the manifest's text OLD by NEW (argv[4], argv[5]; the first occurrence), e.g. another
         * gemm_arith or program_version; -resign: re-commit as the trainer would */
        if (argc < 6) die("replace needs OLD NEW");
        replace_manifest(argv[4], argv[5]);
        if (strcmp(act, "replace-resign") == 0) recommit();
    } else {
        fprintf(stderr, "vt_tamper: unknown action %s\n", act);
        return 64;
    }
    printf("tampered step %lld\n", (long long)s);
    sqlite3_close(db);
    return 0;
}
