/* vt_hash.h - SHA-256 (OpenSSL EVP) with an _init/_update/_final interface. */
#ifndef VT_HASH_H
#define VT_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "vt_error.h"

#define VT_HASH_LEN 32

typedef struct {
    void *md; /* EVP_MD_CTX* */
} vt_sha256_ctx;

vt_err vt_sha256_init(vt_sha256_ctx *c) VT_WARN_UNUSED;
vt_err vt_sha256_update(vt_sha256_ctx *c, const void *p, size_t n) VT_WARN_UNUSED;
/* Writes the digest and releases the context (also on failure). */
vt_err vt_sha256_final(vt_sha256_ctx *c, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;
/* Releases a context without finishing it (safe on a zeroed or finished context). */
void vt_sha256_abort(vt_sha256_ctx *c);
/* One-shot digest. */
vt_err vt_sha256(const void *p, size_t n, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

/* Lower-case hex of a digest into out (2*VT_HASH_LEN+1 bytes). */
void vt_hex(const uint8_t *h, size_t n, char *out);
/* Parse 2*n hex digits; returns VT_ERR_FORMAT on anything else. */
vt_err vt_unhex(const char *s, uint8_t *out, size_t n) VT_WARN_UNUSED;

#endif
