/* vt_commitment.c - the commitment file (vt_commitment.h; byte layout in docs/format.md,
 * "Commitment file"). */
#include "vt_commitment.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "vt_file.h"

#define COMMITMENT_VERSION 1

void vt_store_commitment_path(const char *run_dir, char *out, size_t cap)
{
    if (cap) snprintf(out, cap, "%s/commitment.vtc", run_dir);
}

void vt_commitment_body(const vt_commitment *c, uint8_t out[VT_COMMITMENT_BODY_LEN])
{
    memcpy(out, "VTCM", 4);
    vt_put_u32le(out + 4, c->version);
    memcpy(out + 8, c->manifest_hash, VT_HASH_LEN);
    vt_put_u64le(out + 40, c->step_count);
    memcpy(out + 48, c->root, VT_HASH_LEN);
    memcpy(out + 80, c->public_key, 32);
}

vt_err vt_commitment_write(const char *path, const vt_commitment *c)
{
    VT_RETURN_ERROR_IF(!path || !c, VT_ERR_ARG, "vt_commitment_write: invalid argument");
    VT_RETURN_ERROR_IF(c->version != COMMITMENT_VERSION, VT_ERR_ARG, "commitment version %u is not %d", c->version,
                       COMMITMENT_VERSION);
    uint8_t file[VT_COMMITMENT_FILE_LEN];
    vt_commitment_body(c, file);
    memcpy(file + VT_COMMITMENT_BODY_LEN, c->signature, 64);
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
    VT_RETURN_ERROR_IF(memcmp(file, "VTCM", 4) != 0, VT_ERR_FORMAT, "%s is not a commitment file (bad magic)", path);
    uint32_t version = vt_get_u32le(file + 4);
    VT_RETURN_ERROR_IF(version != COMMITMENT_VERSION, VT_ERR_FORMAT, "commitment file %s has version %u, not %d", path,
                       version, COMMITMENT_VERSION);
    c->version = version;
    memcpy(c->manifest_hash, file + 8, VT_HASH_LEN);
    c->step_count = vt_get_u64le(file + 40);
    memcpy(c->root, file + 48, VT_HASH_LEN);
    memcpy(c->public_key, file + 80, 32);
    memcpy(c->signature, file + VT_COMMITMENT_BODY_LEN, 64);
    return VT_OK;
}
