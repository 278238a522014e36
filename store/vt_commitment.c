/* vt_commitment.c - the commitment file (vt_commitment.h; byte layout in docs/format.md,
 * "Commitment file"). */
#include "vt_commitment.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "vt_file_int.h"

#define COMMITMENT_VERSION 1

/* the body's fields (docs/format.md "Commitment file"): magic, version, manifest hash, step count,
 * Merkle root, public key; the signature follows the body */
enum {
    OFF_MAGIC = 0,
    OFF_VERSION = OFF_MAGIC + 4,
    OFF_MANIFEST = OFF_VERSION + 4,
    OFF_STEPS = OFF_MANIFEST + VT_HASH_LEN,
    OFF_ROOT = OFF_STEPS + 8,
    OFF_KEY = OFF_ROOT + VT_HASH_LEN,
    KEY_LEN = 32,
    OFF_SIGNATURE = VT_COMMITMENT_BODY_LEN,
    SIGNATURE_LEN = VT_COMMITMENT_FILE_LEN - VT_COMMITMENT_BODY_LEN
};
_Static_assert(OFF_KEY + KEY_LEN == VT_COMMITMENT_BODY_LEN, "the commitment body's fields fill it");
_Static_assert(KEY_LEN == sizeof(((vt_commitment *)0)->public_key) &&
                   SIGNATURE_LEN == sizeof(((vt_commitment *)0)->signature),
               "the commitment's key and signature fields");
#define MAGIC "VTCM"

void vt_store_commitment_path(const char *run_dir, char *out, size_t cap)
{
    if (cap) snprintf(out, cap, "%s/commitment.vtc", run_dir);
}

void vt_commitment_body(const vt_commitment *c, uint8_t out[VT_COMMITMENT_BODY_LEN])
{
    memcpy(out + OFF_MAGIC, MAGIC, 4);
    vt_put_u32le(out + OFF_VERSION, c->version);
    memcpy(out + OFF_MANIFEST, c->manifest_hash, VT_HASH_LEN);
    vt_put_u64le(out + OFF_STEPS, c->step_count);
    memcpy(out + OFF_ROOT, c->root, VT_HASH_LEN);
    memcpy(out + OFF_KEY, c->public_key, KEY_LEN);
}

vt_err vt_commitment_write(const char *path, const vt_commitment *c)
{
    VT_RETURN_ERROR_IF(!path || !c, VT_ERR_ARG, "vt_commitment_write: invalid argument");
    VT_RETURN_ERROR_IF(c->version != COMMITMENT_VERSION, VT_ERR_ARG, "commitment version %u is not %d", c->version,
                       COMMITMENT_VERSION);
    uint8_t file[VT_COMMITMENT_FILE_LEN];
    vt_commitment_body(c, file);
    memcpy(file + OFF_SIGNATURE, c->signature, SIGNATURE_LEN);
    return vti_write_durable_at(path, file, sizeof file, "commitment");
}

vt_err vt_commitment_read(const char *path, vt_commitment *c)
{
    VT_RETURN_ERROR_IF(!path || !c, VT_ERR_ARG, "vt_commitment_read: invalid argument");
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "rb");
    VT_RETURN_ERROR_IF(!f, VT_ERR_IO, "cannot open commitment file %s: %s", path, strerror(errno));
    uint8_t file[VT_COMMITMENT_FILE_LEN + 1];
    size_t n = fread(file, 1, sizeof file, f);
    int bad = ferror(f);
    fclose(f);
    VT_RETURN_ERROR_IF(bad, VT_ERR_IO, "cannot read commitment file %s", path);
    VT_RETURN_ERROR_IF(n != VT_COMMITMENT_FILE_LEN, VT_ERR_FORMAT, "commitment file %s is %s%zu bytes, not %d", path,
                       n > VT_COMMITMENT_FILE_LEN ? "more than " : "", n > VT_COMMITMENT_FILE_LEN ? n - 1 : n,
                       VT_COMMITMENT_FILE_LEN);
    VT_RETURN_ERROR_IF(memcmp(file + OFF_MAGIC, MAGIC, 4) != 0, VT_ERR_FORMAT, "%s is not a commitment file (bad magic)", path);
    uint32_t version = vt_get_u32le(file + OFF_VERSION);
    VT_RETURN_ERROR_IF(version != COMMITMENT_VERSION, VT_ERR_FORMAT, "commitment file %s has version %u, not %d", path,
                       version, COMMITMENT_VERSION);
    c->version = version;
    memcpy(c->manifest_hash, file + OFF_MANIFEST, VT_HASH_LEN);
    c->step_count = vt_get_u64le(file + OFF_STEPS);
    memcpy(c->root, file + OFF_ROOT, VT_HASH_LEN);
    memcpy(c->public_key, file + OFF_KEY, KEY_LEN);
    memcpy(c->signature, file + OFF_SIGNATURE, SIGNATURE_LEN);
    return VT_OK;
}
