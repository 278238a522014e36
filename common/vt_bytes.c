#include "vt_bytes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void vt_buf_init(vt_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void vt_buf_free(vt_buf *b)
{
    free(b->data);
    vt_buf_init(b);
}

vt_err vt_buf_reserve(vt_buf *b, size_t extra)
{
    VT_RETURN_ERROR_IF(extra > SIZE_MAX - b->len, VT_ERR_LIMIT, "buffer size overflow");
    size_t need = b->len + extra;
    if (need <= b->cap) return VT_OK;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    uint8_t *d = realloc(b->data, cap);
    VT_RETURN_ERROR_IF(!d, VT_ERR_NOMEM, "out of memory growing a buffer to %zu bytes", cap);
    b->data = d;
    b->cap = cap;
    return VT_OK;
}

vt_err vt_buf_append(vt_buf *b, const void *p, size_t n)
{
    VT_FORWARD_IF_ERROR(vt_buf_reserve(b, n));
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    return VT_OK;
}

vt_err vt_buf_u8(vt_buf *b, uint8_t v) { return vt_buf_append(b, &v, 1); }

vt_err vt_buf_u16le(vt_buf *b, uint16_t v)
{
    uint8_t t[2];
    vt_put_u16le(t, v);
    return vt_buf_append(b, t, 2);
}

vt_err vt_buf_u32le(vt_buf *b, uint32_t v)
{
    uint8_t t[4];
    vt_put_u32le(t, v);
    return vt_buf_append(b, t, 4);
}

vt_err vt_buf_u64le(vt_buf *b, uint64_t v)
{
    uint8_t t[8];
    vt_put_u64le(t, v);
    return vt_buf_append(b, t, 8);
}

vt_err vt_buf_varint(vt_buf *b, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    do {
        uint8_t byte = (uint8_t)(v & 0x7f);
        v >>= 7;
        t[n++] = byte | (v ? 0x80 : 0);
    } while (v);
    return vt_buf_append(b, t, n);
}

vt_err vt_read_skip(vt_reader *r, const uint8_t **where, size_t n, const char *what)
{
    VT_RETURN_ERROR_IF(n > vt_reader_left(r), VT_ERR_FORMAT,
                       "truncated input: %s needs %zu bytes at offset %zu, %zu left", what, n, r->pos,
                       vt_reader_left(r));
    if (where) *where = r->p + r->pos;
    r->pos += n;
    return VT_OK;
}

vt_err vt_read_bytes(vt_reader *r, void *dst, size_t n, const char *what)
{
    const uint8_t *src = NULL;
    VT_FORWARD_IF_ERROR(vt_read_skip(r, &src, n, what));
    if (n) memcpy(dst, src, n);
    return VT_OK;
}

vt_err vt_read_u8(vt_reader *r, uint8_t *v, const char *what) { return vt_read_bytes(r, v, 1, what); }

vt_err vt_read_u16le(vt_reader *r, uint16_t *v, const char *what)
{
    const uint8_t *p = NULL;
    VT_FORWARD_IF_ERROR(vt_read_skip(r, &p, 2, what));
    *v = vt_get_u16le(p);
    return VT_OK;
}

vt_err vt_read_u32le(vt_reader *r, uint32_t *v, const char *what)
{
    const uint8_t *p = NULL;
    VT_FORWARD_IF_ERROR(vt_read_skip(r, &p, 4, what));
    *v = vt_get_u32le(p);
    return VT_OK;
}

vt_err vt_read_u64le(vt_reader *r, uint64_t *v, const char *what)
{
    const uint8_t *p = NULL;
    VT_FORWARD_IF_ERROR(vt_read_skip(r, &p, 8, what));
    *v = vt_get_u64le(p);
    return VT_OK;
}

vt_err vt_read_varint(vt_reader *r, uint64_t *v, const char *what)
{
    uint64_t val = 0;
    for (unsigned i = 0; i < 10; i++) {
        uint8_t byte;
        VT_RETURN_ERROR_IF(r->pos >= r->len, VT_ERR_FORMAT, "truncated varint (%s) at offset %zu", what,
                           r->pos);
        byte = r->p[r->pos++];
        VT_RETURN_ERROR_IF(i == 9 && byte > 1, VT_ERR_FORMAT, "varint (%s) overflows 64 bits at offset %zu",
                           what, r->pos - 1);
        val |= (uint64_t)(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80)) {
            VT_RETURN_ERROR_IF(i > 0 && byte == 0, VT_ERR_FORMAT,
                               "non-minimal varint (%s) at offset %zu", what, r->pos - 1);
            *v = val;
            return VT_OK;
        }
    }
    VT_RETURN_ERROR(VT_ERR_FORMAT, "varint (%s) longer than 10 bytes at offset %zu", what, r->pos);
}

vt_err vt_write_file_atomic(const char *path, const void *data, size_t n)
{
    VT_RETURN_ERROR_IF(!path || (!data && n), VT_ERR_ARG, "vt_write_file_atomic: NULL argument");
    char tmp[4096];
    int k = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    VT_RETURN_ERROR_IF(k < 0 || (size_t)k >= sizeof tmp, VT_ERR_ARG, "path too long: %s", path);
    FILE *f = fopen(tmp, "wb");
    VT_RETURN_ERROR_IF(!f, VT_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    int err = 0;
    if (fwrite(data, 1, n, f) != n) err = errno ? errno : EIO;
    if (fclose(f) != 0 && !err) err = errno ? errno : EIO;
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) {
        (void)unlink(tmp);
        VT_RETURN_ERROR(VT_ERR_IO, "cannot write %s: %s", path, strerror(err));
    }
    return VT_OK;
}
