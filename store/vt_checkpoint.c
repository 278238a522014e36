/* vt_checkpoint.c - checkpoint files and their records in the run store (vt_checkpoint.h;
 * byte layout in docs/format.md, "Checkpoint file"). A checkpoint is written (temp file,
 * fsync, rename, directory fsync) before its (step, file hash, n_values) row is recorded,
 * and read back with every byte hashed and its structure checked before anything is
 * decompressed. */
#include "vt_checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zstd.h>

#include "../common/vt_bytes.h"
#include "../common/vt_debug.h"
#include "vt_file.h"
#include "vt_store_internal.h"

#define CKPT_HEADER_LEN 24
#define CKPT_VERSION 1
#define CKPT_PATH_FMT "%s/checkpoints/ckpt-%012llu.vtck"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define VT_HOST_LE 1
#else
#define VT_HOST_LE 0
#endif

void vt_store_checkpoint_path(const char *run_dir, uint64_t step, char *out, size_t cap)
{
    if (cap) snprintf(out, cap, CKPT_PATH_FMT, run_dir, (unsigned long long)step);
}

static char *ckpt_path(const vt_store *s, uint64_t step)
{
    return vti_str_printf(CKPT_PATH_FMT, s->run_dir, (unsigned long long)step);
}

char *vti_ckpt_dir(const char *run_dir) { return vti_str_printf("%s/checkpoints", run_dir); }

/* The step of a checkpoint file's name "ckpt-<12 digits>.vtck" (exactly); 0 when it is not one. */
static int ckpt_name_step(const char *name, uint64_t *step)
{
    if (strlen(name) != 22 || strncmp(name, "ckpt-", 5) != 0 || strcmp(name + 17, ".vtck") != 0) return 0;
    uint64_t v = 0;
    for (int i = 5; i < 17; i++) {
        if (name[i] < '0' || name[i] > '9') return 0;
        v = v * 10 + (uint64_t)(name[i] - '0');
    }
    *step = v;
    return 1;
}

/* Deletes checkpoint file p (absent is fine), sets *removed when it did, frees p. */
static vt_err unlink_ckpt(char *p, int *removed)
{
    vt_err e = VT_OK;
    if (unlink(p) == 0)
        *removed = 1;
    else if (errno != ENOENT)
        e = vt_set_error(VT_ERR_IO, "cannot delete checkpoint file %s: %s", p, strerror(errno));
    free(p);
    return e;
}

vt_err vti_ckpt_remove_files(vt_store *s, const uint64_t *steps, size_t n, uint64_t after)
{
    vt_err e = VT_OK;
    int removed = 0;
    for (size_t i = 0; i < n && !e; i++) {
        char *p = ckpt_path(s, steps[i]);
        if (!p) {
            e = vt_set_error(VT_ERR_NOMEM, "out of memory truncating run store %s", s->db_path);
        } else {
            e = unlink_ckpt(p, &removed);
        }
    }
    char *d = vti_ckpt_dir(s->run_dir);
    if (!d) return e ? e : vt_set_error(VT_ERR_NOMEM, "out of memory");
    DIR *dir = e ? NULL : opendir(d);
    if (dir) { /* files written but never recorded (a writer killed in between) */
        struct dirent *ent;
        while (!e && (ent = readdir(dir)) != NULL) {
            uint64_t step = 0;
            if (!ckpt_name_step(ent->d_name, &step) || step <= after) continue;
            char *p = vti_str_printf("%s/%s", d, ent->d_name);
            if (!p) {
                e = vt_set_error(VT_ERR_NOMEM, "out of memory");
            } else {
                e = unlink_ckpt(p, &removed);
            }
        }
        closedir(dir);
    }
    if (!e && removed) e = vti_fsync_dir(d);
    free(d);
    return e;
}

void vti_ckpt_remove_temps(vt_store *s)
{
    char *d = vti_ckpt_dir(s->run_dir);
    DIR *dir = d ? opendir(d) : NULL;
    if (dir) {
        struct dirent *ent;
        while ((ent = readdir(dir)) != NULL) {
            if (strncmp(ent->d_name, "ckpt-", 5) != 0 || !strstr(ent->d_name, ".vtck.tmp")) continue;
            char *p = vti_str_printf("%s/%s", d, ent->d_name);
            if (p) unlink(p);
            free(p);
        }
        closedir(dir);
    }
    free(d);
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
    /* within the buffer, and the frame records the raw length the reader checks against n */
    VT_ASSERT(zlen <= bound && ZSTD_getFrameContentSize(file + CKPT_HEADER_LEN, zlen) == (unsigned long long)raw_len);
    size_t flen = CKPT_HEADER_LEN + zlen;
    if ((e = vt_sha256(file, flen, hash))) goto done;
    path = ckpt_path(s, step);
    ckdir = vti_ckpt_dir(s->run_dir);
    if (!path || !ckdir) {
        e = vt_set_error(VT_ERR_NOMEM, "out of memory writing checkpoint %llu", (unsigned long long)step);
        goto done;
    }
    if (mkdir(ckdir, 0777) != 0 && errno != EEXIST) {
        e = vt_set_error(VT_ERR_IO, "cannot create %s: %s", ckdir, strerror(errno));
        goto done;
    }
    if ((e = vti_write_durable_at(path, file, flen, "ckpt"))) goto done;

    sqlite3_stmt *st = s->put_ckpt;
    int rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)step);
    if (rc == SQLITE_OK) rc = sqlite3_bind_blob(st, 2, hash, VT_HASH_LEN, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 3, (sqlite3_int64)n);
    if (rc != SQLITE_OK) {
        vti_store_stmt_done(st);
        e = vti_store_db_fail(s, rc, "binding");
    } else {
        e = vti_store_exec(s, st, "recording a checkpoint");
    }
    if (!e) vti_fault(NULL, "ckpt.recorded");
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
    VT_FORWARD_IF_ERROR(vti_store_bind_step(s, st, step));
    int rc = sqlite3_step(st);
    vt_err e = VT_OK;
    if (rc == SQLITE_DONE)
        e = vt_set_error(VT_ERR_ARG, "run store %s has no checkpoint at step %llu", s->db_path,
                         (unsigned long long)step);
    else if (rc != SQLITE_ROW)
        e = vti_store_db_fail(s, rc, "reading a checkpoint record");
    if (!e) e = vti_store_col_hash(s, st, 0, want, "file_hash", "checkpoint", step);
    if (!e) e = vti_store_col_uint(s, st, 1, (uint64_t)INT64_MAX, &rec_n, "n_values of checkpoint", step);
    vti_store_stmt_done(st);
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
    return vti_store_steps_of(s, s->list_ckpt, steps, n);
}
