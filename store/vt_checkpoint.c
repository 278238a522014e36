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
#include "vt_file_int.h"
#include "vt_store_int.h"

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

/* ------------------------------------------------------------- the streaming writer */

struct vt_ckpt_writer {
    vt_store *s;
    uint64_t step;
    size_t n, done;  /* values declared, appended */
    int half_passed; /* the write point ckpt.tmp-half */
    vti_dfile d;
    vt_sha256_ctx hc; /* the file hash, as the bytes are written */
    ZSTD_CCtx *cc;
    uint8_t *out; /* ZSTD_CStreamOutSize() bytes */
    size_t out_cap;
};

/* bytes to the temporary file and the file hash */
static vt_err wr_bytes(vt_ckpt_writer *w, const void *p, size_t n)
{
    VT_FORWARD_IF_ERROR(vti_dfile_write(&w->d, p, n));
    return vt_sha256_update(&w->hc, p, n);
}

/* one compression call over in (mode: ZSTD_e_continue or ZSTD_e_end), its output written; *left:
 * what zstd still holds to flush */
static vt_err wr_compress(vt_ckpt_writer *w, ZSTD_inBuffer *in, ZSTD_EndDirective mode, size_t *left)
{
    ZSTD_outBuffer ob = {w->out, w->out_cap, 0};
    size_t r = ZSTD_compressStream2(w->cc, &ob, in, mode);
    VT_RETURN_ERROR_IF(ZSTD_isError(r), VT_ERR_INTERNAL, "checkpoint %llu: zstd: %s", (unsigned long long)w->step,
                       ZSTD_getErrorName(r));
    *left = r;
    return wr_bytes(w, w->out, ob.pos);
}

void vt_ckpt_write_abort(vt_ckpt_writer *w)
{
    if (!w) return;
    if (w->d.f || w->d.tmp) vti_dfile_abort(&w->d);
    vt_sha256_abort(&w->hc);
    ZSTD_freeCCtx(w->cc);
    free(w->out);
    free(w);
}

vt_err vt_ckpt_write_open(vt_store *s, uint64_t step, size_t n, int zstd_level, vt_ckpt_writer **out)
{
    VT_RETURN_ERROR_IF(!s || !out, VT_ERR_ARG, "vt_ckpt_write_open: invalid argument");
    *out = NULL;
    VT_RETURN_ERROR_IF(s->readonly, VT_ERR_ARG, "run store %s is open read-only", s->db_path);
    VT_RETURN_ERROR_IF(step >= (uint64_t)INT64_MAX, VT_ERR_ARG, "checkpoint step %llu out of range",
                       (unsigned long long)step);
    VT_RETURN_ERROR_IF(zstd_level < ZSTD_minCLevel() || zstd_level > ZSTD_maxCLevel(), VT_ERR_ARG,
                       "zstd level %d out of range", zstd_level);
    VT_RETURN_ERROR_IF(n > (SIZE_MAX - CKPT_HEADER_LEN) / 8 || (uint64_t)n > (uint64_t)INT64_MAX, VT_ERR_LIMIT,
                       "checkpoint of %zu values is too large", n);
    vt_ckpt_writer *w = calloc(1, sizeof *w);
    VT_RETURN_ERROR_IF(!w, VT_ERR_NOMEM, "out of memory writing checkpoint %llu", (unsigned long long)step);
    w->s = s, w->step = step, w->n = n;
    w->out_cap = ZSTD_CStreamOutSize();
    w->out = malloc(w->out_cap);
    w->cc = ZSTD_createCCtx();
    char *path = ckpt_path(s, step), *ckdir = vti_ckpt_dir(s->run_dir);
    vt_err e = VT_OK;
    if (!w->out || !w->cc || !path || !ckdir) {
        e = vt_set_error(VT_ERR_NOMEM, "out of memory writing checkpoint %llu", (unsigned long long)step);
    } else if (ZSTD_isError(ZSTD_CCtx_setParameter(w->cc, ZSTD_c_compressionLevel, zstd_level)) ||
               ZSTD_isError(ZSTD_CCtx_setParameter(w->cc, ZSTD_c_contentSizeFlag, 1)) ||
               ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(w->cc, (unsigned long long)n * 4))) {
        e = vt_set_error(VT_ERR_INTERNAL, "checkpoint %llu: zstd refused its parameters", (unsigned long long)step);
    } else if (mkdir(ckdir, 0777) != 0 && errno != EEXIST) {
        e = vt_set_error(VT_ERR_IO, "cannot create %s: %s", ckdir, strerror(errno));
    }
    if (!e) e = vt_sha256_init(&w->hc);
    if (!e) e = vti_dfile_open(&w->d, path, 1);
    free(path);
    free(ckdir);
    if (!e) {
        w->d.point = "ckpt";
        vti_fault("ckpt", "tmp-created");
        uint8_t hdr[CKPT_HEADER_LEN];
        memcpy(hdr, "VTCK", 4);
        vt_put_u16le(hdr + 4, CKPT_VERSION);
        vt_put_u16le(hdr + 6, 0);
        vt_put_u64le(hdr + 8, step);
        vt_put_u64le(hdr + 16, (uint64_t)n);
        e = wr_bytes(w, hdr, sizeof hdr);
    }
    if (e) {
        vt_ckpt_write_abort(w);
        return e;
    }
    *out = w;
    return VT_OK;
}

/* ckpt.tmp-half: half the values appended and what zstd gave out so far flushed */
static vt_err wr_half(vt_ckpt_writer *w)
{
    if (w->half_passed) return VT_OK;
    w->half_passed = 1;
    VT_RETURN_ERROR_IF(fflush(w->d.f) != 0, VT_ERR_IO, "cannot write %s: %s", w->d.tmp, strerror(errno));
    vti_fault("ckpt", "tmp-half");
    return VT_OK;
}

vt_err vt_ckpt_write_append(vt_ckpt_writer *w, const float *v, size_t count)
{
    VT_RETURN_ERROR_IF(!w || (!v && count), VT_ERR_ARG, "vt_ckpt_write_append: invalid argument");
    VT_RETURN_ERROR_IF(count > w->n - w->done, VT_ERR_ARG, "checkpoint %llu: %zu values appended beyond its %zu",
                       (unsigned long long)w->step, w->done + count - w->n, w->n);
    uint8_t conv[16384];
    while (count) {
        size_t k = count;
        const void *src = v;
        if (!VT_HOST_LE) { /* the values as FP32 little-endian */
            k = k < sizeof conv / 4 ? k : sizeof conv / 4;
            for (size_t i = 0; i < k; i++) vt_put_u32le(conv + 4 * i, vt_f32_bits(v[i]));
            src = conv;
        }
        ZSTD_inBuffer in = {src, k * 4, 0};
        while (in.pos < in.size) {
            size_t left;
            VT_FORWARD_IF_ERROR(wr_compress(w, &in, ZSTD_e_continue, &left));
        }
        v += k, count -= k, w->done += k;
        if (2 * w->done >= w->n) VT_FORWARD_IF_ERROR(wr_half(w));
    }
    return VT_OK;
}

vt_err vt_ckpt_write_finish(vt_ckpt_writer *w)
{
    VT_RETURN_ERROR_IF(!w, VT_ERR_ARG, "vt_ckpt_write_finish: invalid argument");
    vt_err e = VT_OK;
    if (w->done != w->n)
        e = vt_set_error(VT_ERR_INTERNAL, "checkpoint %llu: %zu values of %zu appended", (unsigned long long)w->step,
                         w->done, w->n);
    if (!e) e = wr_half(w);
    for (size_t left = 1; !e && left;) {
        ZSTD_inBuffer in = {NULL, 0, 0};
        e = wr_compress(w, &in, ZSTD_e_end, &left);
    }
    uint8_t hash[VT_HASH_LEN];
    if (!e) e = vt_sha256_final(&w->hc, hash);
    if (!e) e = vti_dfile_commit(&w->d); /* (aborts the temporary when it fails) */
    if (!e) {
        vt_store *s = w->s;
        sqlite3_stmt *st = s->put_ckpt;
        int rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)w->step);
        if (rc == SQLITE_OK) rc = sqlite3_bind_blob(st, 2, hash, VT_HASH_LEN, SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 3, (sqlite3_int64)w->n);
        if (rc != SQLITE_OK) {
            vti_store_stmt_done(st);
            e = vti_store_db_fail(s, rc, "binding");
        } else {
            e = vti_store_exec(s, st, "recording a checkpoint");
        }
        if (!e) vti_fault(NULL, "ckpt.recorded");
    }
    vt_ckpt_write_abort(w);
    return e;
}

vt_err vt_store_put_checkpoint(vt_store *s, uint64_t step, const float *state, size_t n, int zstd_level)
{
    VT_RETURN_ERROR_IF(!s || (!state && n), VT_ERR_ARG, "vt_store_put_checkpoint: invalid argument");
    vt_ckpt_writer *w = NULL;
    VT_FORWARD_IF_ERROR(vt_ckpt_write_open(s, step, n, zstd_level, &w));
    vt_err e = vt_ckpt_write_append(w, state, n);
    if (e) {
        vt_ckpt_write_abort(w);
        return e;
    }
    return vt_ckpt_write_finish(w);
}

/* ------------------------------------------------------------- the streaming reader */

struct vt_ckpt_reader {
    uint64_t step;
    size_t n, done; /* values in the file, read */
    char *path;
    FILE *f;
    uint64_t size, got; /* the file's size, the bytes read of it */
    uint8_t want[VT_HASH_LEN];
    vt_sha256_ctx hc;
    int hc_live;
    ZSTD_DCtx *dc;
    uint8_t *in;
    size_t in_cap;
    ZSTD_inBuffer ib;
    int frame_end; /* the frame's end was decoded */
};

void vt_ckpt_read_abort(vt_ckpt_reader *r)
{
    if (!r) return;
    if (r->hc_live) vt_sha256_abort(&r->hc);
    if (r->f) fclose(r->f);
    ZSTD_freeDCtx(r->dc);
    free(r->in);
    free(r->path);
    free(r);
}

/* the next bytes of the file into the input buffer (hashed); *eof when there are none */
static vt_err rd_fill(vt_ckpt_reader *r, int *eof)
{
    size_t k = fread(r->in, 1, r->in_cap, r->f);
    VT_RETURN_ERROR_IF(ferror(r->f), VT_ERR_IO, "checkpoint %llu: cannot read %s", (unsigned long long)r->step, r->path);
    r->got += k;
    VT_RETURN_ERROR_IF(r->got > r->size, VT_ERR_IO, "checkpoint %llu: %s changed while being read",
                       (unsigned long long)r->step, r->path);
    r->ib.src = r->in, r->ib.size = k, r->ib.pos = 0;
    *eof = k == 0;
    return k ? vt_sha256_update(&r->hc, r->in, k) : VT_OK;
}

/* A frame that decoding finds corrupt: a file of the recorded bytes is unreadable (FORMAT); one
 * whose bytes differ from them was altered (MISMATCH), as the whole-file check would say. */
static vt_err rd_corrupt(vt_ckpt_reader *r, size_t zerr)
{
    char why[160];
    snprintf(why, sizeof why, "%s", ZSTD_getErrorName(zerr));
    int eof = 0;
    vt_err e = VT_OK;
    while (!e && !eof) e = rd_fill(r, &eof);
    uint8_t h[VT_HASH_LEN];
    r->hc_live = 0;
    if (!e) e = vt_sha256_final(&r->hc, h);
    if (!e && memcmp(h, r->want, VT_HASH_LEN) != 0)
        return vt_set_error(VT_ERR_MISMATCH, "checkpoint %llu does not match its recorded hash (%s)",
                            (unsigned long long)r->step, r->path);
    return e ? e : vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s: corrupt zstd frame (%s)",
                                (unsigned long long)r->step, r->path, why);
}

/* Decode into out[0 .. cap) (cap 0: the frame's end, nothing more may come out); *produced. */
static vt_err rd_decode(vt_ckpt_reader *r, uint8_t *out, size_t cap, size_t *produced)
{
    uint8_t extra[64];
    int probe = cap == 0; /* after the last value: the frame must end with no further byte */
    ZSTD_outBuffer ob = {probe ? extra : out, probe ? sizeof extra : cap, 0};
    while ((probe ? !r->frame_end : ob.pos < ob.size)) {
        if (r->ib.pos == r->ib.size) {
            int eof = 0;
            VT_FORWARD_IF_ERROR(rd_fill(r, &eof));
            VT_RETURN_ERROR_IF(eof, VT_ERR_FORMAT, "checkpoint %llu: %s: truncated zstd frame (the file ends within it)",
                               (unsigned long long)r->step, r->path);
        }
        size_t z = ZSTD_decompressStream(r->dc, &ob, &r->ib);
        if (ZSTD_isError(z)) return rd_corrupt(r, z);
        if (probe && ob.pos) break;
        if (z == 0) {
            r->frame_end = 1;
            if (!probe) break;
        }
    }
    VT_RETURN_ERROR_IF(probe && ob.pos, VT_ERR_FORMAT, "checkpoint %llu: %s: the frame holds more than %zu bytes",
                       (unsigned long long)r->step, r->path, r->n * 4);
    VT_RETURN_ERROR_IF(!probe && ob.pos < ob.size, VT_ERR_FORMAT,
                       "checkpoint %llu: %s: the frame holds %zu bytes, expected %zu", (unsigned long long)r->step,
                       r->path, r->done * 4 + ob.pos, r->n * 4);
    *produced = ob.pos;
    return VT_OK;
}

vt_err vt_ckpt_read_open(vt_store *s, uint64_t step, size_t expected_n, vt_ckpt_reader **out)
{
    VT_RETURN_ERROR_IF(!s || !out, VT_ERR_ARG, "vt_ckpt_read_open: invalid argument");
    *out = NULL;
    VT_RETURN_ERROR_IF(step >= (uint64_t)INT64_MAX, VT_ERR_ARG, "no checkpoint at step %llu",
                       (unsigned long long)step);
    VT_RETURN_ERROR_IF(expected_n > (SIZE_MAX - CKPT_HEADER_LEN) / 8, VT_ERR_LIMIT,
                       "checkpoint of %zu values is too large", expected_n);
    size_t raw_len = expected_n * 4;
    size_t zbound = ZSTD_compressBound(raw_len);
    VT_RETURN_ERROR_IF(ZSTD_isError(zbound), VT_ERR_LIMIT, "checkpoint of %zu values is too large", expected_n);
    uint64_t max_file = (uint64_t)CKPT_HEADER_LEN + zbound;

    vt_ckpt_reader *r = calloc(1, sizeof *r);
    VT_RETURN_ERROR_IF(!r, VT_ERR_NOMEM, "out of memory reading checkpoint %llu", (unsigned long long)step);
    r->step = step, r->n = expected_n;
    /* The record. */
    uint64_t rec_n = 0;
    sqlite3_stmt *st = s->get_ckpt;
    vt_err e = vti_store_bind_step(s, st, step);
    int rc = e ? SQLITE_DONE : sqlite3_step(st);
    if (e) {
    } else if (rc == SQLITE_DONE) {
        e = vt_set_error(VT_ERR_ARG, "run store %s has no checkpoint at step %llu", s->db_path, (unsigned long long)step);
    } else if (rc != SQLITE_ROW) {
        e = vti_store_db_fail(s, rc, "reading a checkpoint record");
    }
    if (!e) e = vti_store_col_hash(s, st, 0, r->want, "file_hash", "checkpoint", step);
    if (!e) e = vti_store_col_uint(s, st, 1, (uint64_t)INT64_MAX, &rec_n, "n_values of checkpoint", step);
    vti_store_stmt_done(st);
    /* The file. */
    if (!e) {
        r->path = ckpt_path(s, step);
        r->in_cap = ZSTD_DStreamInSize();
        r->in = malloc(r->in_cap > CKPT_HEADER_LEN ? r->in_cap : CKPT_HEADER_LEN);
        r->dc = ZSTD_createDCtx();
        if (!r->path || !r->in || !r->dc) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    }
    if (!e && !(r->f = fopen(r->path, "rb")))
        e = vt_set_error(VT_ERR_IO, "checkpoint %llu: cannot open %s: %s", (unsigned long long)step, r->path,
                         strerror(errno));
    struct stat sb;
    if (!e && (fstat(fileno(r->f), &sb) != 0 || !S_ISREG(sb.st_mode)))
        e = vt_set_error(VT_ERR_IO, "checkpoint %llu: %s is not a regular file", (unsigned long long)step, r->path);
    if (!e && (uint64_t)sb.st_size > max_file)
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s is larger than any checkpoint of %zu values",
                         (unsigned long long)step, r->path, expected_n);
    if (!e) {
        r->size = (uint64_t)sb.st_size;
        e = vt_sha256_init(&r->hc);
        r->hc_live = !e;
    }
    /* The header. */
    uint8_t hdr[CKPT_HEADER_LEN];
    size_t hl = e ? 0 : fread(hdr, 1, sizeof hdr, r->f);
    if (!e && ferror(r->f)) e = vt_set_error(VT_ERR_IO, "checkpoint %llu: cannot read %s", (unsigned long long)step, r->path);
    if (!e) {
        r->got = hl;
        e = vt_sha256_update(&r->hc, hdr, hl);
    }
    if (!e && hl < sizeof hdr)
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s is truncated (%zu bytes)", (unsigned long long)step,
                         r->path, hl);
    if (!e) {
        uint16_t version = vt_get_u16le(hdr + 4), flags = vt_get_u16le(hdr + 6);
        uint64_t hstep = vt_get_u64le(hdr + 8), hn = vt_get_u64le(hdr + 16);
        if (memcmp(hdr, "VTCK", 4) != 0) {
            e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s is not a checkpoint file (bad magic)",
                             (unsigned long long)step, r->path);
        } else if (version != CKPT_VERSION) {
            e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s has version %u, not %d", (unsigned long long)step,
                             r->path, version, CKPT_VERSION);
        } else if (flags != 0) {
            e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s has unknown flags 0x%04x", (unsigned long long)step,
                             r->path, flags);
        } else if (hstep != step) {
            e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s declares step %llu", (unsigned long long)step, r->path,
                             (unsigned long long)hstep);
        } else if (hn != (uint64_t)expected_n || rec_n != (uint64_t)expected_n) {
            e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s holds %llu values (recorded %llu), expected %zu",
                             (unsigned long long)step, r->path, (unsigned long long)hn, (unsigned long long)rec_n,
                             expected_n);
        }
    }
    /* The frame's header: one zstd frame (not a skippable one) declaring exactly n*4 bytes. */
    int eof = 0;
    if (!e) e = rd_fill(r, &eof);
    if (!e && (r->ib.size < 4 || vt_get_u32le(r->in) != ZSTD_MAGICNUMBER))
        e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s: the payload is not a zstd frame", (unsigned long long)step,
                         r->path);
    if (!e) {
        unsigned long long csize = ZSTD_getFrameContentSize(r->in, r->ib.size);
        if (csize == ZSTD_CONTENTSIZE_ERROR)
            e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s: malformed zstd frame header", (unsigned long long)step,
                             r->path);
        else if (csize == ZSTD_CONTENTSIZE_UNKNOWN)
            e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s: the zstd frame does not declare its size",
                             (unsigned long long)step, r->path);
        else if (csize != (unsigned long long)raw_len)
            e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s: the zstd frame declares %llu bytes, expected %zu",
                             (unsigned long long)step, r->path, csize, raw_len);
    }
    if (e) {
        vt_ckpt_read_abort(r);
        return e;
    }
    *out = r;
    return VT_OK;
}

vt_err vt_ckpt_read(vt_ckpt_reader *r, float *v, size_t count)
{
    VT_RETURN_ERROR_IF(!r || (!v && count), VT_ERR_ARG, "vt_ckpt_read: invalid argument");
    VT_RETURN_ERROR_IF(count > r->n - r->done, VT_ERR_ARG, "checkpoint %llu: %zu values read beyond its %zu",
                       (unsigned long long)r->step, r->done + count - r->n, r->n);
    size_t k = 0;
    if (count) VT_FORWARD_IF_ERROR(rd_decode(r, (uint8_t *)v, count * 4, &k));
    if (!VT_HOST_LE)
        for (size_t i = 0; i < count; i++) v[i] = vt_bits_f32(vt_get_u32le((const uint8_t *)(v + i)));
    r->done += count;
    return VT_OK;
}

vt_err vt_ckpt_read_close(vt_ckpt_reader *r)
{
    VT_RETURN_ERROR_IF(!r, VT_ERR_ARG, "vt_ckpt_read_close: invalid argument");
    vt_err e = VT_OK;
    if (r->done != r->n)
        e = vt_set_error(VT_ERR_INTERNAL, "checkpoint %llu: %zu values of %zu read", (unsigned long long)r->step,
                         r->done, r->n);
    size_t k = 0;
    if (!e) e = rd_decode(r, NULL, 0, &k); /* the frame ends, and nothing comes out of it beyond n values */
    int eof = 0;
    if (!e && r->ib.pos == r->ib.size) e = rd_fill(r, &eof);
    if (!e && !eof) { /* bytes after the frame: the rest of the file hashed, then said */
        uint64_t extra = 0;
        while (!e && !eof) {
            extra += r->ib.size - r->ib.pos;
            e = rd_fill(r, &eof);
        }
        if (!e)
            e = vt_set_error(VT_ERR_FORMAT, "checkpoint %llu: %s: %llu trailing bytes after the zstd frame",
                             (unsigned long long)r->step, r->path, (unsigned long long)extra);
    }
    if (!e && r->got != r->size)
        e = vt_set_error(VT_ERR_IO, "checkpoint %llu: %s changed while being read", (unsigned long long)r->step,
                         r->path);
    uint8_t h[VT_HASH_LEN];
    if (!e) {
        r->hc_live = 0;
        e = vt_sha256_final(&r->hc, h);
    }
    if (!e && memcmp(h, r->want, VT_HASH_LEN) != 0)
        e = vt_set_error(VT_ERR_MISMATCH, "checkpoint %llu does not match its recorded hash (%s)",
                         (unsigned long long)r->step, r->path);
    vt_ckpt_read_abort(r);
    return e;
}

vt_err vt_store_get_checkpoint(vt_store *s, uint64_t step, size_t expected_n, float **state)
{
    VT_RETURN_ERROR_IF(!s || !state, VT_ERR_ARG, "vt_store_get_checkpoint: invalid argument");
    *state = NULL;
    vt_ckpt_reader *r = NULL;
    VT_FORWARD_IF_ERROR(vt_ckpt_read_open(s, step, expected_n, &r));
    float *out = malloc(expected_n ? expected_n * sizeof *out : 1);
    vt_err e = out ? vt_ckpt_read(r, out, expected_n)
                   : vt_set_error(VT_ERR_NOMEM, "out of memory reading checkpoint %llu", (unsigned long long)step);
    if (e) {
        vt_ckpt_read_abort(r);
        free(out);
        return e;
    }
    e = vt_ckpt_read_close(r);
    if (e) {
        free(out);
        return e;
    }
    *state = out;
    return VT_OK;
}

vt_err vt_store_list_checkpoints(vt_store *s, uint64_t **steps, size_t *n)
{
    VT_RETURN_ERROR_IF(!s || !steps || !n, VT_ERR_ARG, "vt_store_list_checkpoints: invalid argument");
    return vti_store_steps_of(s, s->list_ckpt, steps, n);
}
