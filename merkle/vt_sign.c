/* vt_sign.c - Ed25519 (libsodium), key pairs and key files. */
#include "vt_sign.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/vt_bytes.h"
#include "../common/vt_hash.h"

static const uint8_t SK_MAGIC[4] = {'V', 'T', 'S', 'K'};
static const uint8_t PK_MAGIC[4] = {'V', 'T', 'P', 'K'};

vt_err vt_sign_init(void)
{
    VT_RETURN_ERROR_IF(sodium_init() < 0, VT_ERR_CRYPTO, "sodium_init failed");
    return VT_OK;
}

vt_err vt_sign_keypair(vt_keypair *kp)
{
    VT_RETURN_ERROR_IF(!kp, VT_ERR_ARG, "vt_sign_keypair: NULL argument");
    VT_FORWARD_IF_ERROR(vt_sign_init());
    VT_RETURN_ERROR_IF(crypto_sign_ed25519_keypair(kp->pk, kp->sk) != 0, VT_ERR_CRYPTO,
                       "crypto_sign_ed25519_keypair failed");
    return VT_OK;
}

vt_err vt_sign_seed_keypair(vt_keypair *kp, const uint8_t seed[VT_SIGN_SEED_LEN])
{
    VT_RETURN_ERROR_IF(!kp || !seed, VT_ERR_ARG, "vt_sign_seed_keypair: NULL argument");
    VT_FORWARD_IF_ERROR(vt_sign_init());
    VT_RETURN_ERROR_IF(crypto_sign_ed25519_seed_keypair(kp->pk, kp->sk, seed) != 0, VT_ERR_CRYPTO,
                       "crypto_sign_ed25519_seed_keypair failed");
    return VT_OK;
}

void vt_keypair_wipe(vt_keypair *kp)
{
    if (kp) sodium_memzero(kp, sizeof *kp);
}

vt_err vt_sign_detached(const vt_keypair *kp, const void *msg, size_t n, uint8_t sig[VT_SIGN_SIG_LEN])
{
    static const uint8_t empty[1] = {0};
    VT_RETURN_ERROR_IF(!kp || !sig || (n && !msg), VT_ERR_ARG, "vt_sign_detached: NULL argument");
    VT_FORWARD_IF_ERROR(vt_sign_init());
    unsigned long long siglen = 0;
    if (crypto_sign_ed25519_detached(sig, &siglen, n ? msg : empty, n, kp->sk) != 0 ||
        siglen != VT_SIGN_SIG_LEN)
        VT_RETURN_ERROR(VT_ERR_CRYPTO, "crypto_sign_ed25519_detached failed");
    return VT_OK;
}

int vt_sign_verify_detached(const uint8_t sig[VT_SIGN_SIG_LEN], const void *msg, size_t n,
                            const uint8_t pk[VT_SIGN_PK_LEN])
{
    static const uint8_t empty[1] = {0};
    if (!sig || !pk || (n && !msg)) return -1;
    if (vt_sign_init() != VT_OK) return -1;
    return crypto_sign_ed25519_verify_detached(sig, n ? msg : empty, n, pk) == 0 ? 0 : -1;
}

vt_err vt_sign_fingerprint(const uint8_t pk[VT_SIGN_PK_LEN], char out[VT_SIGN_FPR_HEX_LEN + 1])
{
    uint8_t h[VT_HASH_LEN];
    VT_RETURN_ERROR_IF(!pk || !out, VT_ERR_ARG, "vt_sign_fingerprint: NULL argument");
    VT_FORWARD_IF_ERROR(vt_sha256(pk, VT_SIGN_PK_LEN, h));
    vt_hex(h, VT_SIGN_FPR_BYTES, out);
    return VT_OK;
}

/* ------------------------------------------------------------------ encoding */

void vt_sign_encode_secret_key(const vt_keypair *kp, uint8_t out[VT_SIGN_SK_FILE_LEN])
{
    memcpy(out, SK_MAGIC, 4);
    vt_put_u32le(out + 4, VT_SIGN_KEYFILE_VERSION);
    memcpy(out + 8, kp->sk, VT_SIGN_SK_LEN);
    memcpy(out + 8 + VT_SIGN_SK_LEN, kp->pk, VT_SIGN_PK_LEN);
}

void vt_sign_encode_public_key(const uint8_t pk[VT_SIGN_PK_LEN], uint8_t out[VT_SIGN_PK_FILE_LEN])
{
    memcpy(out, PK_MAGIC, 4);
    vt_put_u32le(out + 4, VT_SIGN_KEYFILE_VERSION);
    memcpy(out + 8, pk, VT_SIGN_PK_LEN);
}

static vt_err check_header(vt_reader *r, const uint8_t magic[4], const char *what)
{
    uint8_t m[4];
    uint32_t version;
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m, 4, what));
    VT_RETURN_ERROR_IF(memcmp(m, magic, 4) != 0, VT_ERR_FORMAT, "%s: bad magic", what);
    VT_FORWARD_IF_ERROR(vt_read_u32le(r, &version, what));
    VT_RETURN_ERROR_IF(version != VT_SIGN_KEYFILE_VERSION, VT_ERR_FORMAT,
                       "%s: unsupported version %u", what, (unsigned)version);
    return VT_OK;
}

vt_err vt_sign_decode_secret_key(const uint8_t *p, size_t n, vt_keypair *kp)
{
    static const char what[] = "secret key file";
    VT_RETURN_ERROR_IF(!kp || (n && !p), VT_ERR_ARG, "vt_sign_decode_secret_key: NULL argument");
    VT_RETURN_ERROR_IF(n != VT_SIGN_SK_FILE_LEN, VT_ERR_FORMAT, "%s: %zu bytes, expected %d", what,
                       n, VT_SIGN_SK_FILE_LEN);
    VT_FORWARD_IF_ERROR(vt_sign_init());
    vt_reader r;
    vt_reader_init(&r, p, n);
    VT_FORWARD_IF_ERROR(check_header(&r, SK_MAGIC, what));

    vt_keypair in, derived;
    vt_err e = vt_read_bytes(&r, in.sk, VT_SIGN_SK_LEN, what);
    if (!e) e = vt_read_bytes(&r, in.pk, VT_SIGN_PK_LEN, what);
    if (!e && vt_reader_left(&r) != 0) e = vt_set_error(VT_ERR_FORMAT, "%s: trailing bytes", what);
    /* The seed must derive exactly the stored secret and public key. */
    if (!e && crypto_sign_ed25519_seed_keypair(derived.pk, derived.sk, in.sk) != 0)
        e = vt_set_error(VT_ERR_CRYPTO, "crypto_sign_ed25519_seed_keypair failed");
    if (!e && (sodium_memcmp(derived.sk, in.sk, VT_SIGN_SK_LEN) != 0 ||
               sodium_memcmp(derived.pk, in.pk, VT_SIGN_PK_LEN) != 0))
        e = vt_set_error(VT_ERR_FORMAT, "%s: public key does not match the secret key", what);
    if (!e) *kp = in;
    vt_keypair_wipe(&in);
    vt_keypair_wipe(&derived);
    return e;
}

vt_err vt_sign_decode_public_key(const uint8_t *p, size_t n, uint8_t pk[VT_SIGN_PK_LEN])
{
    static const char what[] = "public key file";
    VT_RETURN_ERROR_IF(!pk || (n && !p), VT_ERR_ARG, "vt_sign_decode_public_key: NULL argument");
    VT_RETURN_ERROR_IF(n != VT_SIGN_PK_FILE_LEN, VT_ERR_FORMAT, "%s: %zu bytes, expected %d", what,
                       n, VT_SIGN_PK_FILE_LEN);
    VT_FORWARD_IF_ERROR(vt_sign_init());
    vt_reader r;
    vt_reader_init(&r, p, n);
    VT_FORWARD_IF_ERROR(check_header(&r, PK_MAGIC, what));
    uint8_t k[VT_SIGN_PK_LEN];
    VT_FORWARD_IF_ERROR(vt_read_bytes(&r, k, VT_SIGN_PK_LEN, what));
    VT_RETURN_ERROR_IF(vt_reader_left(&r) != 0, VT_ERR_FORMAT, "%s: trailing bytes", what);
    VT_RETURN_ERROR_IF(!crypto_core_ed25519_is_valid_point(k), VT_ERR_FORMAT,
                       "%s: not a valid Ed25519 public key", what);
    memcpy(pk, k, VT_SIGN_PK_LEN);
    return VT_OK;
}

/* ------------------------------------------------------------------ files */

static vt_err write_all(int fd, const uint8_t *p, size_t n, const char *path)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        VT_RETURN_ERROR_IF(w <= 0, VT_ERR_IO, "write %s: %s", path, w < 0 ? strerror(errno) : "no progress");
        p += w;
        n -= (size_t)w;
    }
    return VT_OK;
}

/* Best effort: make the rename durable. */
static void fsync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash)
        dir = strdup(".");
    else if (slash == path)
        dir = strdup("/");
    else
        dir = strndup(path, (size_t)(slash - path));
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

/* Moves tmp onto path; without force fails (EEXIST) when path exists, atomically. */
static int move_into_place(const char *tmp, const char *path, int force)
{
    if (force) return rename(tmp, path);
#ifdef RENAME_NOREPLACE
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP && errno != EOPNOTSUPP) return -1;
#endif
    /* Filesystem without RENAME_NOREPLACE: link() also refuses an existing target. */
    if (link(tmp, path) != 0) return -1;
    (void)unlink(tmp);
    return 0;
}

static vt_err write_key_file(const char *path, const uint8_t *data, size_t n, mode_t mode, int force)
{
    VT_RETURN_ERROR_IF(!path || !*path, VT_ERR_ARG, "key file: empty path");
    size_t plen = strlen(path);
    static const char suffix[] = ".tmp.XXXXXX";
    char *tmp = malloc(plen + sizeof suffix);
    VT_RETURN_ERROR_IF(!tmp, VT_ERR_NOMEM, "out of memory");
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, suffix, sizeof suffix);

    vt_err e = VT_OK;
    /* mkostemp opens with O_RDWR|O_CREAT|O_EXCL and mode 0600. */
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        e = vt_set_error(VT_ERR_IO, "create temporary file for %s: %s", path, strerror(errno));
        free(tmp);
        return e;
    }
    if (fchmod(fd, mode) != 0) e = vt_set_error(VT_ERR_IO, "chmod %s: %s", tmp, strerror(errno));
    if (!e) e = write_all(fd, data, n, tmp);
    if (!e && fsync(fd) != 0) e = vt_set_error(VT_ERR_IO, "fsync %s: %s", tmp, strerror(errno));
    if (close(fd) != 0 && !e) e = vt_set_error(VT_ERR_IO, "close %s: %s", tmp, strerror(errno));
    if (!e && move_into_place(tmp, path, force) != 0) {
        if (errno == EEXIST)
            e = vt_set_error(VT_ERR_IO, "%s exists; refusing to overwrite it (use force)", path);
        else
            e = vt_set_error(VT_ERR_IO, "rename %s to %s: %s", tmp, path, strerror(errno));
    }
    if (e)
        (void)unlink(tmp);
    else
        fsync_parent_dir(path);
    free(tmp);
    return e;
}

vt_err vt_sign_write_secret_key(const char *path, const vt_keypair *kp, int force)
{
    VT_RETURN_ERROR_IF(!kp, VT_ERR_ARG, "vt_sign_write_secret_key: NULL argument");
    uint8_t buf[VT_SIGN_SK_FILE_LEN];
    vt_sign_encode_secret_key(kp, buf);
    vt_err e = write_key_file(path, buf, sizeof buf, 0600, force);
    sodium_memzero(buf, sizeof buf);
    return e;
}

vt_err vt_sign_write_public_key(const char *path, const uint8_t pk[VT_SIGN_PK_LEN], int force)
{
    VT_RETURN_ERROR_IF(!pk, VT_ERR_ARG, "vt_sign_write_public_key: NULL argument");
    uint8_t buf[VT_SIGN_PK_FILE_LEN];
    vt_sign_encode_public_key(pk, buf);
    return write_key_file(path, buf, sizeof buf, 0644, force);
}

/* Reads at most cap bytes; *n = cap + 1 signals a longer file. */
static vt_err read_small_file(const char *path, uint8_t *buf, size_t cap, size_t *n)
{
    VT_RETURN_ERROR_IF(!path, VT_ERR_ARG, "key file: NULL path");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    VT_RETURN_ERROR_IF(fd < 0, VT_ERR_IO, "open %s: %s", path, strerror(errno));
    size_t got = 0;
    vt_err e = VT_OK;
    uint8_t extra;
    for (;;) {
        uint8_t *dst = got < cap ? buf + got : &extra;
        size_t want = got < cap ? cap - got : 1;
        ssize_t r = read(fd, dst, want);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            e = vt_set_error(VT_ERR_IO, "read %s: %s", path, strerror(errno));
            break;
        }
        if (r == 0) break;
        got += (size_t)r;
        if (got > cap) break; /* longer than any valid key file */
    }
    close(fd);
    *n = got;
    return e;
}

vt_err vt_sign_read_secret_key(const char *path, vt_keypair *kp)
{
    VT_RETURN_ERROR_IF(!kp, VT_ERR_ARG, "vt_sign_read_secret_key: NULL argument");
    uint8_t buf[VT_SIGN_SK_FILE_LEN];
    size_t n = 0;
    vt_err e = read_small_file(path, buf, sizeof buf, &n);
    if (!e && n > sizeof buf)
        e = vt_set_error(VT_ERR_FORMAT, "%s: longer than a secret key file (%d bytes)", path,
                         VT_SIGN_SK_FILE_LEN);
    if (!e) e = vt_sign_decode_secret_key(buf, n, kp);
    sodium_memzero(buf, sizeof buf);
    return e;
}

vt_err vt_sign_read_public_key(const char *path, uint8_t pk[VT_SIGN_PK_LEN])
{
    VT_RETURN_ERROR_IF(!pk, VT_ERR_ARG, "vt_sign_read_public_key: NULL argument");
    uint8_t buf[VT_SIGN_PK_FILE_LEN];
    size_t n = 0;
    VT_FORWARD_IF_ERROR(read_small_file(path, buf, sizeof buf, &n));
    VT_RETURN_ERROR_IF(n > sizeof buf, VT_ERR_FORMAT, "%s: longer than a public key file (%d bytes)",
                       path, VT_SIGN_PK_FILE_LEN);
    return vt_sign_decode_public_key(buf, n, pk);
}

vt_err vt_sign_keygen_files(const char *path, int force, char fpr[VT_SIGN_FPR_HEX_LEN + 1])
{
    vt_keypair kp;
    char pub[4096];
    VT_RETURN_ERROR_IF(snprintf(pub, sizeof pub, "%s.pub", path) >= (int)sizeof pub, VT_ERR_ARG, "key path too long");
    VT_FORWARD_IF_ERROR(vt_sign_init());
    VT_FORWARD_IF_ERROR(vt_sign_keypair(&kp));
    vt_err e = vt_sign_write_secret_key(path, &kp, force);
    if (!e) e = vt_sign_write_public_key(pub, kp.pk, force);
    if (!e && fpr) e = vt_sign_fingerprint(kp.pk, fpr);
    vt_keypair_wipe(&kp);
    return e;
}
