/* vt_sign.h - Ed25519 signatures (libsodium), key pairs and key files.
 *
 * Signatures are plain RFC 8032 Ed25519 (pure, no prehash, no context) over the
 * caller's bytes: 64-byte detached signatures, 32-byte public keys. The secret
 * key is libsodium's 64-byte form: seed (32) || public key (32).
 *
 * Key files (binary, all integers little-endian; see docs/commitments.md):
 *
 *   secret key file, 104 bytes, mode 0600:
 *     "VTSK" | u32le version = 1 | secret key (64: seed || pk) | public key (32)
 *   public key file, 40 bytes:
 *     "VTPK" | u32le version = 1 | public key (32)
 *
 * Readers accept exactly these lengths and versions; anything else (truncated,
 * oversized, wrong magic or version, a secret key whose seed does not derive the
 * stored public key, a public key that is not a valid Ed25519 point) fails with
 * VT_ERR_FORMAT. Writers create a temporary file with O_CREAT|O_EXCL in the
 * target directory, write and fsync it, then move it into place atomically;
 * they refuse to replace an existing file (VT_ERR_IO) unless force != 0.
 */
#ifndef VT_SIGN_H
#define VT_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

#define VT_SIGN_PK_LEN 32
#define VT_SIGN_SK_LEN 64
#define VT_SIGN_SEED_LEN 32
#define VT_SIGN_SIG_LEN 64
/* Fingerprint: hex of the first 16 bytes of SHA-256(public key). */
#define VT_SIGN_FPR_BYTES 16
#define VT_SIGN_FPR_HEX_LEN (2 * VT_SIGN_FPR_BYTES) /* characters, without the NUL */

#define VT_SIGN_KEYFILE_VERSION 1u
#define VT_SIGN_SK_FILE_LEN (4 + 4 + VT_SIGN_SK_LEN + VT_SIGN_PK_LEN) /* 104 */
#define VT_SIGN_PK_FILE_LEN (4 + 4 + VT_SIGN_PK_LEN)                  /* 40 */

typedef struct {
    uint8_t pk[VT_SIGN_PK_LEN];
    uint8_t sk[VT_SIGN_SK_LEN]; /* seed || pk */
} vt_keypair;

/* Initialises libsodium; idempotent and thread-safe. Every function below calls
 * it itself, so calling it is only needed to fail early. */
vt_err vt_sign_init(void) VT_WARN_UNUSED;

/* Fresh random key pair. */
vt_err vt_sign_keypair(vt_keypair *kp) VT_WARN_UNUSED;
/* Deterministic key pair from a 32-byte seed (RFC 8032 secret key). */
vt_err vt_sign_seed_keypair(vt_keypair *kp, const uint8_t seed[VT_SIGN_SEED_LEN]) VT_WARN_UNUSED;
/* Overwrites the key pair with zeros (sodium_memzero). */
void vt_keypair_wipe(vt_keypair *kp);

/* Detached signature of msg[0..n). */
vt_err vt_sign_detached(const vt_keypair *kp, const void *msg, size_t n,
                        uint8_t sig[VT_SIGN_SIG_LEN]) VT_WARN_UNUSED;
/* 0 when sig is a valid signature of msg[0..n) under pk, else -1. */
int vt_sign_verify_detached(const uint8_t sig[VT_SIGN_SIG_LEN], const void *msg, size_t n,
                            const uint8_t pk[VT_SIGN_PK_LEN]) VT_WARN_UNUSED;

/* Fingerprint for display: VT_SIGN_FPR_HEX_LEN lower-case hex digits and a NUL. */
vt_err vt_sign_fingerprint(const uint8_t pk[VT_SIGN_PK_LEN],
                           char out[VT_SIGN_FPR_HEX_LEN + 1]) VT_WARN_UNUSED;

/* In-memory key file images (the exact bytes of the files). */
void vt_sign_encode_secret_key(const vt_keypair *kp, uint8_t out[VT_SIGN_SK_FILE_LEN]);
void vt_sign_encode_public_key(const uint8_t pk[VT_SIGN_PK_LEN], uint8_t out[VT_SIGN_PK_FILE_LEN]);
vt_err vt_sign_decode_secret_key(const uint8_t *p, size_t n, vt_keypair *kp) VT_WARN_UNUSED;
vt_err vt_sign_decode_public_key(const uint8_t *p, size_t n, uint8_t pk[VT_SIGN_PK_LEN]) VT_WARN_UNUSED;

/* Key files. Secret key files are created with mode 0600, public key files
 * with 0644 (less the umask). */
vt_err vt_sign_write_secret_key(const char *path, const vt_keypair *kp, int force) VT_WARN_UNUSED;
vt_err vt_sign_write_public_key(const char *path, const uint8_t pk[VT_SIGN_PK_LEN], int force) VT_WARN_UNUSED;
vt_err vt_sign_read_secret_key(const char *path, vt_keypair *kp) VT_WARN_UNUSED;
vt_err vt_sign_read_public_key(const char *path, uint8_t pk[VT_SIGN_PK_LEN]) VT_WARN_UNUSED;

/* Generates a key pair and writes PATH (secret, mode 0600) and PATH.pub; fpr (may be NULL)
 * receives the public key's fingerprint. Refuses to overwrite unless force. */
vt_err vt_sign_keygen_files(const char *path, int force, char fpr[VT_SIGN_FPR_HEX_LEN + 1]) VT_WARN_UNUSED;

#endif
