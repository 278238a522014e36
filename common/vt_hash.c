#include "vt_hash.h"

#include <openssl/evp.h>
#include <string.h>

vt_err vt_sha256_init(vt_sha256_ctx *c)
{
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    c->md = m;
    VT_RETURN_ERROR_IF(!m, VT_ERR_NOMEM, "EVP_MD_CTX_new failed");
    if (EVP_DigestInit_ex(m, EVP_sha256(), NULL) != 1) {
        vt_sha256_abort(c);
        VT_RETURN_ERROR(VT_ERR_CRYPTO, "EVP_DigestInit_ex(sha256) failed");
    }
    return VT_OK;
}

vt_err vt_sha256_update(vt_sha256_ctx *c, const void *p, size_t n)
{
    VT_RETURN_ERROR_IF(!c->md, VT_ERR_ARG, "sha256 context not initialised");
    VT_RETURN_ERROR_IF(n && EVP_DigestUpdate((EVP_MD_CTX *)c->md, p, n) != 1, VT_ERR_CRYPTO,
                       "EVP_DigestUpdate failed");
    return VT_OK;
}

vt_err vt_sha256_final(vt_sha256_ctx *c, uint8_t out[VT_HASH_LEN])
{
    unsigned int len = 0;
    VT_RETURN_ERROR_IF(!c->md, VT_ERR_ARG, "sha256 context not initialised");
    int ok = EVP_DigestFinal_ex((EVP_MD_CTX *)c->md, out, &len);
    vt_sha256_abort(c);
    VT_RETURN_ERROR_IF(ok != 1 || len != VT_HASH_LEN, VT_ERR_CRYPTO, "EVP_DigestFinal_ex failed");
    return VT_OK;
}

void vt_sha256_abort(vt_sha256_ctx *c)
{
    if (c->md) EVP_MD_CTX_free((EVP_MD_CTX *)c->md);
    c->md = NULL;
}

vt_err vt_sha256(const void *p, size_t n, uint8_t out[VT_HASH_LEN])
{
    vt_sha256_ctx c;
    VT_FORWARD_IF_ERROR(vt_sha256_init(&c));
    vt_err e = vt_sha256_update(&c, p, n);
    if (e) {
        vt_sha256_abort(&c);
        return e;
    }
    return vt_sha256_final(&c, out);
}

void vt_hex(const uint8_t *h, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[h[i] >> 4];
        out[2 * i + 1] = d[h[i] & 15];
    }
    out[2 * n] = 0;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

vt_err vt_unhex(const char *s, uint8_t *out, size_t n)
{
    VT_RETURN_ERROR_IF(!s || strlen(s) != 2 * n, VT_ERR_FORMAT, "expected %zu hex digits", 2 * n);
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        VT_RETURN_ERROR_IF(hi < 0 || lo < 0, VT_ERR_FORMAT, "bad hex digit near position %zu", 2 * i);
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return VT_OK;
}
