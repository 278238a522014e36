/* vt_commitment.h - the commitment file RUN_DIR/commitment.vtc: manifest hash, step count,
 * Merkle root, public key and Ed25519 signature (format in docs/format.md, "Commitment file"). */
#ifndef VT_COMMITMENT_H
#define VT_COMMITMENT_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../common/vt_hash.h"

typedef struct {
    uint32_t version;                 /* 1 */
    uint8_t manifest_hash[VT_HASH_LEN];
    uint64_t step_count;              /* leaves in the tree = last step + 1 */
    uint8_t root[VT_HASH_LEN];
    uint8_t public_key[32];
    uint8_t signature[64];            /* Ed25519 over the 4+4+32+8+32+32 byte body */
} vt_commitment;

/* Canonical body bytes that are signed: "VTCM" u32 version, manifest hash, u64 step count,
 * root, public key (112 bytes). */
#define VT_COMMITMENT_BODY_LEN 112
#define VT_COMMITMENT_FILE_LEN (VT_COMMITMENT_BODY_LEN + 64)
void vt_commitment_body(const vt_commitment *c, uint8_t out[VT_COMMITMENT_BODY_LEN]);
/* Write atomically (temp + fsync + rename) / read with every field checked (not the signature). */
vt_err vt_commitment_write(const char *path, const vt_commitment *c) VT_WARN_UNUSED;
vt_err vt_commitment_read(const char *path, vt_commitment *c) VT_WARN_UNUSED;

/* Path helper: RUN_DIR/commitment.vtc */
void vt_store_commitment_path(const char *run_dir, char *out, size_t cap);

#endif
