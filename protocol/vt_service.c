/* vt_service.c - the trainer's signed service record (docs/format.md "Service record"). */
#include "vt_proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

vt_err vt_service_check_addr(const char *addr)
{
    VT_RETURN_ERROR_IF(!addr, VT_ERR_ARG, "address: NULL");
    size_t n = strnlen(addr, VT_MSG_ADDR_MAX + 1);
    VT_RETURN_ERROR_IF(n == 0 || n > VT_MSG_ADDR_MAX, VT_ERR_FORMAT, "address: %s", n ? "too long" : "empty");
    const char *colon = strrchr(addr, ':');
    VT_RETURN_ERROR_IF(!colon || colon == addr, VT_ERR_FORMAT, "address \"%.64s\": expected HOST:PORT", addr);
    size_t hl = (size_t)(colon - addr);
    if (addr[0] == '[') {
        VT_RETURN_ERROR_IF(hl < 3 || addr[hl - 1] != ']', VT_ERR_FORMAT, "address \"%.64s\": bad [IPv6] host", addr);
        for (size_t i = 1; i + 1 < hl; i++)
            VT_RETURN_ERROR_IF(!strchr("0123456789abcdefABCDEF:.", addr[i]), VT_ERR_FORMAT,
                               "address \"%.64s\": bad character in the IPv6 host", addr);
    } else {
        for (size_t i = 0; i < hl; i++) {
            char c = addr[i];
            int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
            VT_RETURN_ERROR_IF(!ok, VT_ERR_FORMAT, "address \"%.64s\": bad character in the host", addr);
        }
    }
    const char *ps = colon + 1;
    size_t pl = strlen(ps);
    VT_RETURN_ERROR_IF(pl == 0 || pl > 5 || strspn(ps, "0123456789") != pl || atoi(ps) < 1 || atoi(ps) > 65535,
                       VT_ERR_FORMAT, "address \"%.64s\": bad port", addr);
    return VT_OK;
}

vt_err vt_service_sign(const vt_service *s, const vt_keypair *kp, uint8_t *out, size_t cap, size_t *len)
{
    VT_RETURN_ERROR_IF(!s || !kp || !out || !len, VT_ERR_ARG, "vt_service_sign: NULL argument");
    VT_RETURN_ERROR_IF(cap < VT_SERVICE_MAX_LEN, VT_ERR_ARG, "vt_service_sign: buffer too small");
    VT_RETURN_ERROR_IF(s->n_arbiters < 1 || s->n_arbiters > VT_SERVICE_MAX_ARBITERS, VT_ERR_ARG,
                       "vt_service_sign: %u arbiter keys, 1 to %u", (unsigned)s->n_arbiters, VT_SERVICE_MAX_ARBITERS);
    if (vt_service_check_addr(s->addr) != VT_OK) return vt_set_error(VT_ERR_ARG, "%s", vt_errmsg());
    size_t n = strlen(s->addr), k = s->n_arbiters, at = 89 + 32 * k;
    size_t body = VT_SERVICE_BASE_LEN - VT_SIGN_SIG_LEN + 32 * k + n;
    memcpy(out, VT_SERVICE_MAGIC, 4);
    vt_put_u32le(out + 4, VT_SERVICE_VERSION);
    memcpy(out + 8, s->manifest_hash, VT_MSG_HASH_LEN);
    memcpy(out + 40, kp->pk, VT_SIGN_PK_LEN);
    vt_put_u64le(out + 72, s->serial);
    vt_put_u64le(out + 80, s->expiry);
    out[88] = (uint8_t)k;
    memcpy(out + 89, s->arbiter_pk, 32 * k);
    vt_put_u16le(out + at, (uint16_t)n);
    memcpy(out + at + 2, s->addr, n);
    VT_FORWARD_IF_ERROR(vt_sign_detached(kp, out, body, out + body));
    *len = body + VT_SIGN_SIG_LEN;
    return VT_OK;
}

vt_err vt_service_parse(const uint8_t *p, size_t n, vt_service *s)
{
    VT_RETURN_ERROR_IF(!s || (!p && n), VT_ERR_ARG, "vt_service_parse: NULL argument");
    memset(s, 0, sizeof *s);
    VT_RETURN_ERROR_IF(n >= 8 && memcmp(p, VT_SERVICE_MAGIC, 4) == 0 && vt_get_u32le(p + 4) == 1, VT_ERR_FORMAT,
                       "service record: version 1 (no expiry, no accepted arbiters) is no longer accepted: the "
                       "trainer signs a version-2 record at each start (trainer serve)");
    VT_RETURN_ERROR_IF(n < VT_SERVICE_MIN_LEN || n > VT_SERVICE_MAX_LEN, VT_ERR_FORMAT,
                       "service record: %zu bytes, not %u to %u", n, VT_SERVICE_MIN_LEN, VT_SERVICE_MAX_LEN);
    VT_RETURN_ERROR_IF(memcmp(p, VT_SERVICE_MAGIC, 4) != 0, VT_ERR_FORMAT, "service record: bad magic");
    VT_RETURN_ERROR_IF(vt_get_u32le(p + 4) != VT_SERVICE_VERSION, VT_ERR_FORMAT, "service record: version %u, not %u",
                       (unsigned)vt_get_u32le(p + 4), VT_SERVICE_VERSION);
    size_t k = p[88];
    VT_RETURN_ERROR_IF(k < 1 || k > VT_SERVICE_MAX_ARBITERS, VT_ERR_FORMAT, "service record: %zu arbiter keys, 1 to %u",
                       k, VT_SERVICE_MAX_ARBITERS);
    size_t at = 89 + 32 * k;
    VT_RETURN_ERROR_IF(n < at + 2 + VT_SIGN_SIG_LEN, VT_ERR_FORMAT, "service record: %zu arbiter keys in %zu bytes", k, n);
    size_t al = vt_get_u16le(p + at);
    VT_RETURN_ERROR_IF(al > VT_MSG_ADDR_MAX || n != VT_SERVICE_BASE_LEN + 32 * k + al, VT_ERR_FORMAT,
                       "service record: %zu arbiter keys and an address of %zu bytes in a record of %zu bytes", k, al, n);
    memcpy(s->manifest_hash, p + 8, VT_MSG_HASH_LEN);
    memcpy(s->trainer_pk, p + 40, VT_SIGN_PK_LEN);
    s->serial = vt_get_u64le(p + 72);
    s->expiry = vt_get_u64le(p + 80);
    s->n_arbiters = (uint32_t)k;
    memcpy(s->arbiter_pk, p + 89, 32 * k);
    memcpy(s->addr, p + at + 2, al);
    s->addr[al] = 0;
    VT_RETURN_ERROR_IF(strlen(s->addr) != al, VT_ERR_FORMAT, "service record: a NUL byte in the address");
    if (vt_service_check_addr(s->addr) != VT_OK) return vt_set_error(VT_ERR_FORMAT, "service record: %s", vt_errmsg());
    size_t body = n - VT_SIGN_SIG_LEN;
    VT_RETURN_ERROR_IF(vt_sign_init() != VT_OK || vt_sign_verify_detached(p + body, p, body, s->trainer_pk) != VT_OK,
                       VT_ERR_CRYPTO, "service record: the signature does not verify under the key it names");
    return VT_OK;
}

uint64_t vt_service_signed_at(const vt_service *s) { return s ? s->serial / 1000000u : 0; }

int vt_service_names_arbiter(const vt_service *s, const uint8_t pk[VT_SIGN_PK_LEN])
{
    for (uint32_t i = 0; s && pk && i < s->n_arbiters && i < VT_SERVICE_MAX_ARBITERS; i++)
        if (memcmp(s->arbiter_pk[i], pk, VT_SIGN_PK_LEN) == 0) return 1;
    return 0;
}

vt_err vt_service_read_file(const char *path, uint8_t *out, size_t cap, size_t *len)
{
    VT_RETURN_ERROR_IF(!path || !out || !len, VT_ERR_ARG, "vt_service_read_file: NULL argument");
    FILE *f = fopen(path, "rb");
    VT_RETURN_ERROR_IF(!f, VT_ERR_IO, "cannot open the service record %s: %s", path, strerror(errno));
    size_t n = fread(out, 1, cap, f);
    int more = fgetc(f) != EOF, bad = ferror(f);
    fclose(f);
    VT_RETURN_ERROR_IF(bad, VT_ERR_IO, "cannot read the service record %s", path);
    VT_RETURN_ERROR_IF(more || n > VT_SERVICE_MAX_LEN, VT_ERR_FORMAT, "service record %s: more than %u bytes", path,
                       VT_SERVICE_MAX_LEN);
    *len = n;
    return VT_OK;
}
