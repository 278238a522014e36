/* vt_transcript.c - transcripts of the dispute game (docs/protocol.md): the append-only file of
 * every message a party sent and received, its writer and its reader. */
#include "vt_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* ------------------------------------------------------------------ transcripts */

struct vt_transcript {
    int fd;
    pthread_mutex_t mu;
    int failed;
    uint64_t size;
};

static vt_err pread_full(int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
    *got = 0;
    while (*got < n) {
        ssize_t r = pread(fd, (uint8_t *)buf + *got, n - *got, (off_t)(off + *got));
        if (r < 0 && errno == EINTR) continue;
        VT_RETURN_ERROR_IF(r < 0, VT_ERR_IO, "transcript: read: %s", strerror(errno));
        if (r == 0) break;
        *got += (size_t)r;
    }
    return VT_OK;
}

static vt_err pwrite_full(int fd, const void *buf, size_t n, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pwrite(fd, (const uint8_t *)buf + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR) continue;
        VT_RETURN_ERROR_IF(r <= 0, VT_ERR_IO, "transcript: write: %s", r < 0 ? strerror(errno) : "no progress");
        done += (size_t)r;
    }
    return VT_OK;
}

static vt_err check_record_header(const uint8_t *rh, uint64_t off, uint32_t version)
{
    uint32_t len = vt_get_u32le(rh + 1 + VT_SIGN_PK_LEN);
    VT_RETURN_ERROR_IF(rh[0] != VT_TR_SENT && rh[0] != VT_TR_RECV && !(rh[0] == VT_TR_NOTE && version >= 2), VT_ERR_FORMAT,
                       "transcript: record at offset %llu: bad direction %u", (unsigned long long)off, rh[0]);
    VT_RETURN_ERROR_IF(len < VT_MSG_OVERHEAD || len > VT_TR_MAX_RECORD, VT_ERR_FORMAT,
                       "transcript: record at offset %llu: length %u outside [%u, %u]", (unsigned long long)off,
                       (unsigned)len, (unsigned)VT_MSG_OVERHEAD, (unsigned)VT_TR_MAX_RECORD);
    return VT_OK;
}

/* Reading takes versions 1 and 2; appending (write = 1) only the current one. */
static vt_err check_file_header(const uint8_t *h, int write, uint32_t *version)
{
    VT_RETURN_ERROR_IF(memcmp(h, VT_TR_MAGIC, 4) != 0, VT_ERR_FORMAT, "transcript: bad magic");
    uint32_t v = vt_get_u32le(h + 4);
    VT_RETURN_ERROR_IF(v < 1 || v > VT_TR_VERSION, VT_ERR_FORMAT, "transcript: unsupported version %u", (unsigned)v);
    VT_RETURN_ERROR_IF(write && v != VT_TR_VERSION, VT_ERR_FORMAT,
                       "transcript: version %u can be read but not appended to (this program writes version %u)",
                       (unsigned)v, VT_TR_VERSION);
    if (version) *version = v;
    return VT_OK;
}

/* Scans an existing transcript; *end = the end of its last complete record. */
static vt_err scan_transcript(int fd, uint64_t fsize, uint64_t *end)
{
    uint8_t h[VT_TR_HEADER_LEN];
    size_t got;
    VT_FORWARD_IF_ERROR(pread_full(fd, h, sizeof h, 0, &got));
    VT_RETURN_ERROR_IF(got != sizeof h, VT_ERR_FORMAT, "transcript: truncated header");
    VT_FORWARD_IF_ERROR(check_file_header(h, 1, NULL));
    uint64_t off = VT_TR_HEADER_LEN;
    while (off < fsize) {
        uint8_t rh[VT_TR_RECORD_HEADER_LEN];
        VT_FORWARD_IF_ERROR(pread_full(fd, rh, sizeof rh, off, &got));
        if (got < sizeof rh) break; /* torn record header */
        VT_FORWARD_IF_ERROR(check_record_header(rh, off, VT_TR_VERSION));
        uint64_t len = vt_get_u32le(rh + 1 + VT_SIGN_PK_LEN);
        if (fsize - off - VT_TR_RECORD_HEADER_LEN < len) break; /* torn record */
        off += VT_TR_RECORD_HEADER_LEN + len;
    }
    *end = off;
    return VT_OK;
}

vt_err vt_transcript_open(const char *path, vt_transcript **out)
{
    VT_RETURN_ERROR_IF(!path || !out, VT_ERR_ARG, "vt_transcript_open: NULL argument");
    *out = NULL;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    VT_RETURN_ERROR_IF(fd < 0, VT_ERR_IO, "transcript %s: %s", path, strerror(errno));
    vt_err e = VT_OK;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0)
        e = vt_set_error(VT_ERR_IO, "transcript %s: in use by another writer", path);
    struct stat st;
    if (e == VT_OK && fstat(fd, &st) != 0) e = vt_set_error(VT_ERR_IO, "transcript %s: %s", path, strerror(errno));
    uint64_t end = VT_TR_HEADER_LEN;
    if (e == VT_OK && st.st_size == 0) {
        uint8_t h[VT_TR_HEADER_LEN];
        memcpy(h, VT_TR_MAGIC, 4);
        vt_put_u32le(h + 4, VT_TR_VERSION);
        e = pwrite_full(fd, h, sizeof h, 0);
        if (e == VT_OK && fdatasync(fd) != 0) e = vt_set_error(VT_ERR_IO, "transcript %s: fsync: %s", path, strerror(errno));
    } else if (e == VT_OK) {
        e = scan_transcript(fd, (uint64_t)st.st_size, &end);
        if (e == VT_OK && end != (uint64_t)st.st_size && ftruncate(fd, (off_t)end) != 0)
            e = vt_set_error(VT_ERR_IO, "transcript %s: cutting a torn record: %s", path, strerror(errno));
    }
    vt_transcript *t = NULL;
    if (e == VT_OK) {
        t = calloc(1, sizeof *t);
        if (!t) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    }
    if (e == VT_OK && pthread_mutex_init(&t->mu, NULL) != 0) {
        free(t);
        e = vt_set_error(VT_ERR_INTERNAL, "transcript: cannot create a mutex");
    }
    if (e != VT_OK) {
        if (e == VT_ERR_FORMAT) {
            char m[512];
            snprintf(m, sizeof m, "%s", vt_errmsg());
            e = vt_set_error(e, "%s: %s", path, m);
        }
        close(fd);
        return e;
    }
    t->fd = fd;
    t->size = end;
    *out = t;
    return VT_OK;
}

vt_err vt_transcript_append(vt_transcript *t, int dir, const uint8_t author_pk[VT_SIGN_PK_LEN],
                            const uint8_t *bytes, size_t len)
{
    VT_RETURN_ERROR_IF(!t || !author_pk || !bytes, VT_ERR_ARG, "vt_transcript_append: NULL argument");
    VT_RETURN_ERROR_IF(dir != VT_TR_SENT && dir != VT_TR_RECV && dir != VT_TR_NOTE, VT_ERR_ARG,
                       "transcript: bad direction %d", dir);
    VT_RETURN_ERROR_IF(len < VT_MSG_OVERHEAD || len > VT_TR_MAX_RECORD, VT_ERR_ARG,
                       "transcript: record length %zu outside [%u, %u]", len, (unsigned)VT_MSG_OVERHEAD,
                       (unsigned)VT_TR_MAX_RECORD);
    uint8_t rh[VT_TR_RECORD_HEADER_LEN];
    rh[0] = (uint8_t)dir;
    memcpy(rh + 1, author_pk, VT_SIGN_PK_LEN);
    vt_put_u32le(rh + 1 + VT_SIGN_PK_LEN, (uint32_t)len);
    pthread_mutex_lock(&t->mu);
    vt_err e = VT_OK;
    if (t->failed) e = vt_set_error(VT_ERR_IO, "transcript: unusable after an earlier write failure");
    if (e == VT_OK) e = pwrite_full(t->fd, rh, sizeof rh, t->size);
    if (e == VT_OK) e = pwrite_full(t->fd, bytes, len, t->size + sizeof rh);
    if (e == VT_OK && fdatasync(t->fd) != 0) e = vt_set_error(VT_ERR_IO, "transcript: fsync: %s", strerror(errno));
    if (e == VT_OK) {
        t->size += sizeof rh + len;
    } else if (!t->failed && ftruncate(t->fd, (off_t)t->size) != 0) {
        t->failed = 1;
    }
    pthread_mutex_unlock(&t->mu);
    return e;
}

vt_err vt_transcript_close(vt_transcript *t)
{
    if (!t) return VT_OK;
    vt_err e = VT_OK;
    if (fsync(t->fd) != 0) e = vt_set_error(VT_ERR_IO, "transcript: fsync: %s", strerror(errno));
    if (close(t->fd) != 0 && e == VT_OK) e = vt_set_error(VT_ERR_IO, "transcript: close: %s", strerror(errno));
    pthread_mutex_destroy(&t->mu);
    free(t);
    return e;
}

struct vt_transcript_reader {
    int fd;
    uint32_t version;
    uint64_t size, off;
    uint8_t *buf;
    size_t cap;
};

vt_err vt_transcript_reader_open(const char *path, vt_transcript_reader **out)
{
    VT_RETURN_ERROR_IF(!path || !out, VT_ERR_ARG, "vt_transcript_reader_open: NULL argument");
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    VT_RETURN_ERROR_IF(fd < 0, VT_ERR_IO, "transcript %s: %s", path, strerror(errno));
    struct stat st;
    uint8_t h[VT_TR_HEADER_LEN];
    size_t got = 0;
    vt_err e = VT_OK;
    if (fstat(fd, &st) != 0) e = vt_set_error(VT_ERR_IO, "transcript %s: %s", path, strerror(errno));
    if (e == VT_OK && !S_ISREG(st.st_mode)) e = vt_set_error(VT_ERR_IO, "transcript %s: not a regular file", path);
    if (e == VT_OK) e = pread_full(fd, h, sizeof h, 0, &got);
    if (e == VT_OK && got != sizeof h) e = vt_set_error(VT_ERR_FORMAT, "transcript %s: truncated header", path);
    uint32_t version = 0;
    if (e == VT_OK) e = check_file_header(h, 0, &version);
    vt_transcript_reader *r = NULL;
    if (e == VT_OK) {
        r = calloc(1, sizeof *r);
        if (!r) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    }
    if (e != VT_OK) {
        close(fd);
        return e;
    }
    r->fd = fd;
    r->version = version;
    r->size = (uint64_t)st.st_size;
    r->off = VT_TR_HEADER_LEN;
    *out = r;
    return VT_OK;
}

vt_err vt_transcript_next(vt_transcript_reader *r, vt_transcript_record *rec, int *eof)
{
    VT_RETURN_ERROR_IF(!r || !rec || !eof, VT_ERR_ARG, "vt_transcript_next: NULL argument");
    memset(rec, 0, sizeof *rec);
    *eof = 0;
    uint8_t rh[VT_TR_RECORD_HEADER_LEN];
    size_t got;
    VT_FORWARD_IF_ERROR(pread_full(r->fd, rh, sizeof rh, r->off, &got));
    if (got == 0) {
        *eof = 1;
        return VT_OK;
    }
    VT_RETURN_ERROR_IF(got < sizeof rh, VT_ERR_FORMAT, "transcript: torn record header at offset %llu",
                       (unsigned long long)r->off);
    VT_FORWARD_IF_ERROR(check_record_header(rh, r->off, r->version));
    uint32_t len = vt_get_u32le(rh + 1 + VT_SIGN_PK_LEN);
    /* the file may have grown since it was opened: re-check its size before allocating */
    struct stat st;
    VT_RETURN_ERROR_IF(fstat(r->fd, &st) != 0, VT_ERR_IO, "transcript: %s", strerror(errno));
    r->size = (uint64_t)st.st_size;
    VT_RETURN_ERROR_IF(r->size < r->off + sizeof rh || r->size - r->off - sizeof rh < len, VT_ERR_FORMAT,
                       "transcript: record at offset %llu claims %u bytes, fewer remain", (unsigned long long)r->off,
                       (unsigned)len);
    if (r->cap < len) {
        uint8_t *nb = realloc(r->buf, len);
        VT_RETURN_ERROR_IF(!nb, VT_ERR_NOMEM, "transcript: out of memory for a %u-byte record", (unsigned)len);
        r->buf = nb;
        r->cap = len;
    }
    VT_FORWARD_IF_ERROR(pread_full(r->fd, r->buf, len, r->off + sizeof rh, &got));
    VT_RETURN_ERROR_IF(got != len, VT_ERR_FORMAT, "transcript: torn record at offset %llu",
                       (unsigned long long)r->off);
    rec->dir = rh[0];
    memcpy(rec->author_pk, rh + 1, VT_SIGN_PK_LEN);
    rec->bytes = r->buf;
    rec->len = len;
    rec->offset = r->off;
    r->off += sizeof rh + len;
    return VT_OK;
}

void vt_transcript_reader_close(vt_transcript_reader *r)
{
    if (!r) return;
    close(r->fd);
    free(r->buf);
    free(r);
}
