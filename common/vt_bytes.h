/* vt_bytes.h - explicit little-endian fields, LEB128 varints and a growable byte buffer. */
#ifndef VT_BYTES_H
#define VT_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vt_error.h"
#include "vt_hd.h"

static inline void vt_put_u16le(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void vt_put_u32le(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void vt_put_u64le(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t vt_get_u16le(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t vt_get_u32le(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static inline uint64_t vt_get_u64le(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static inline uint32_t vt_f32_bits(float f) { return vt_hd_bits32(f); } /* common/vt_hd.h */
static inline float vt_bits_f32(uint32_t u) { return vt_hd_f32(u); }
static inline uint64_t vt_f64_bits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static inline double vt_bits_f64(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

/* Growable output buffer. */
typedef struct {
    uint8_t *data;
    size_t len;
    size_t cap;
} vt_buf;

void vt_buf_init(vt_buf *b);
void vt_buf_free(vt_buf *b);
vt_err vt_buf_reserve(vt_buf *b, size_t extra) VT_WARN_UNUSED;
vt_err vt_buf_append(vt_buf *b, const void *p, size_t n) VT_WARN_UNUSED;
vt_err vt_buf_u8(vt_buf *b, uint8_t v) VT_WARN_UNUSED;
vt_err vt_buf_u16le(vt_buf *b, uint16_t v) VT_WARN_UNUSED;
vt_err vt_buf_u32le(vt_buf *b, uint32_t v) VT_WARN_UNUSED;
vt_err vt_buf_u64le(vt_buf *b, uint64_t v) VT_WARN_UNUSED;
/* Unsigned LEB128, minimal length (at most 10 bytes). */
vt_err vt_buf_varint(vt_buf *b, uint64_t v) VT_WARN_UNUSED;

/* Bounds-checked reader over hostile bytes. Every getter fails with
 * VT_ERR_FORMAT (and a message naming `what`) instead of reading past the end. */
typedef struct {
    const uint8_t *p;
    size_t len;
    size_t pos;
} vt_reader;

static inline void vt_reader_init(vt_reader *r, const void *p, size_t len)
{
    r->p = (const uint8_t *)p;
    r->len = len;
    r->pos = 0;
}
static inline size_t vt_reader_left(const vt_reader *r) { return r->len - r->pos; }
vt_err vt_read_bytes(vt_reader *r, void *dst, size_t n, const char *what) VT_WARN_UNUSED;
vt_err vt_read_skip(vt_reader *r, const uint8_t **where, size_t n, const char *what) VT_WARN_UNUSED;
vt_err vt_read_u8(vt_reader *r, uint8_t *v, const char *what) VT_WARN_UNUSED;
vt_err vt_read_u16le(vt_reader *r, uint16_t *v, const char *what) VT_WARN_UNUSED;
vt_err vt_read_u32le(vt_reader *r, uint32_t *v, const char *what) VT_WARN_UNUSED;
vt_err vt_read_u64le(vt_reader *r, uint64_t *v, const char *what) VT_WARN_UNUSED;
/* Unsigned LEB128; rejects non-minimal encodings and values above 2^64-1. */
vt_err vt_read_varint(vt_reader *r, uint64_t *v, const char *what) VT_WARN_UNUSED;

/* Writes n bytes to path atomically: into path.tmp.<pid>, then rename(2) over path, so a
 * concurrent reader sees either no file (or the previous one) or the whole new content,
 * never a partial write. The temporary is removed on failure. */
vt_err vt_write_file_atomic(const char *path, const void *data, size_t n) VT_WARN_UNUSED;

#endif
