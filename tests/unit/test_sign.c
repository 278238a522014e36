/* test_sign.c - Ed25519 signatures, fingerprints and key files. */
#include "vt_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/vt_bytes.h"
#include "common/vt_hash.h"
#include "merkle/vt_sign.h"

static char g_dir[256];

static void path_in(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", g_dir, name);
}

static int write_raw(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return -1;
    ssize_t w = n ? write(fd, p, n) : 0;
    close(fd);
    return w == (ssize_t)n ? 0 : -1;
}

static int hex_eq(const uint8_t *h, size_t n, const char *hex)
{
    uint8_t want[64];
    if (n > sizeof want || vt_unhex(hex, want, n) != VT_OK) return 0;
    return memcmp(h, want, n) == 0;
}

static void test_rfc8032_vector1(void)
{
    uint8_t seed[32], sig[VT_SIGN_SIG_LEN];
    vt_keypair kp;
    CHECK_OK(vt_unhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", seed, 32));
    CHECK_OK(vt_sign_seed_keypair(&kp, seed));
    CHECK(hex_eq(kp.pk, 32, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"),
          "RFC 8032 test 1 public key");
    CHECK(memcmp(kp.sk, seed, 32) == 0 && memcmp(kp.sk + 32, kp.pk, 32) == 0, "sk = seed || pk");
    CHECK_OK(vt_sign_detached(&kp, "", 0, sig));
    CHECK(hex_eq(sig, 64,
                 "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
          "RFC 8032 test 1 signature");
    CHECK(vt_sign_verify_detached(sig, "", 0, kp.pk) == 0, "RFC 8032 test 1 verifies");
    CHECK_OK(vt_sign_detached(&kp, NULL, 0, sig));
    CHECK(vt_sign_verify_detached(sig, NULL, 0, kp.pk) == 0, "NULL empty message");
    CHECK(vt_sign_verify_detached(sig, "x", 1, kp.pk) == -1, "different message");

    /* fingerprint: hex of the first 16 bytes of SHA-256(pk) */
    char fpr[VT_SIGN_FPR_HEX_LEN + 1];
    uint8_t h[32];
    char want[65];
    CHECK_OK(vt_sign_fingerprint(kp.pk, fpr));
    CHECK_OK(vt_sha256(kp.pk, 32, h));
    vt_hex(h, 16, want);
    CHECK(strlen(fpr) == 32 && strcmp(fpr, want) == 0, "fingerprint %s", fpr);
    vt_keypair_wipe(&kp);
    static const uint8_t zero[sizeof kp] = {0};
    CHECK(memcmp(&kp, zero, sizeof kp) == 0, "wipe");
}

static void test_sign_verify(vt_rng *rng)
{
    vt_keypair kp, other;
    CHECK_OK(vt_sign_init());
    CHECK_OK(vt_sign_init()); /* idempotent */
    CHECK_OK(vt_sign_keypair(&kp));
    CHECK_OK(vt_sign_keypair(&other));
    CHECK(memcmp(kp.pk, other.pk, 32) != 0, "two fresh key pairs differ");

    uint8_t msg[100], sig[VT_SIGN_SIG_LEN];
    for (size_t i = 0; i < sizeof msg; i++) msg[i] = (uint8_t)vt_rng_next(rng);
    CHECK_OK(vt_sign_detached(&kp, msg, sizeof msg, sig));
    CHECK(vt_sign_verify_detached(sig, msg, sizeof msg, kp.pk) == 0, "round trip");
    CHECK(vt_sign_verify_detached(sig, msg, sizeof msg, other.pk) == -1, "other key");
    CHECK(vt_sign_verify_detached(sig, msg, sizeof msg - 1, kp.pk) == -1, "truncated message");

    long accepted = 0;
    for (size_t bit = 0; bit < 8 * sizeof msg; bit++) {
        msg[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        accepted += vt_sign_verify_detached(sig, msg, sizeof msg, kp.pk) == 0;
        msg[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    CHECK(accepted == 0, "%ld message bit flips accepted", accepted);
    accepted = 0;
    for (size_t bit = 0; bit < 8 * sizeof sig; bit++) {
        sig[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        accepted += vt_sign_verify_detached(sig, msg, sizeof msg, kp.pk) == 0;
        sig[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    CHECK(accepted == 0, "%ld signature bit flips accepted", accepted);
    accepted = 0;
    for (size_t bit = 0; bit < 8 * sizeof kp.pk; bit++) {
        uint8_t pk[32];
        memcpy(pk, kp.pk, 32);
        pk[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        accepted += vt_sign_verify_detached(sig, msg, sizeof msg, pk) == 0;
    }
    CHECK(accepted == 0, "%ld public key bit flips accepted", accepted);
    CHECK(vt_sign_verify_detached(sig, msg, sizeof msg, kp.pk) == 0, "still valid after the flips");
    CHECK(vt_sign_verify_detached(NULL, msg, sizeof msg, kp.pk) == -1, "NULL signature");
    CHECK(vt_sign_verify_detached(sig, NULL, 5, kp.pk) == -1, "NULL message");
    CHECK(vt_sign_verify_detached(sig, msg, sizeof msg, NULL) == -1, "NULL key");

    char f1[VT_SIGN_FPR_HEX_LEN + 1], f2[VT_SIGN_FPR_HEX_LEN + 1];
    CHECK_OK(vt_sign_fingerprint(kp.pk, f1));
    CHECK_OK(vt_sign_fingerprint(other.pk, f2));
    CHECK(strcmp(f1, f2) != 0, "fingerprints differ");
    vt_keypair_wipe(&kp);
    vt_keypair_wipe(&other);
}

static void test_key_files(vt_rng *rng)
{
    char sk_path[512], pk_path[512], p[512];
    path_in(sk_path, sizeof sk_path, "trainer.sk");
    path_in(pk_path, sizeof pk_path, "trainer.pk");
    vt_keypair kp, kp2, back;
    uint8_t pk[32];
    CHECK_OK(vt_sign_keypair(&kp));
    CHECK_OK(vt_sign_keypair(&kp2));

    /* write, mode, read back */
    CHECK_OK(vt_sign_write_secret_key(sk_path, &kp, 0));
    CHECK_OK(vt_sign_write_public_key(pk_path, kp.pk, 0));
    struct stat st;
    CHECK(stat(sk_path, &st) == 0 && (st.st_mode & 07777) == 0600, "secret key mode %o",
          (unsigned)(st.st_mode & 07777));
    CHECK(stat(sk_path, &st) == 0 && st.st_size == VT_SIGN_SK_FILE_LEN, "secret key file size");
    CHECK(stat(pk_path, &st) == 0 && st.st_size == VT_SIGN_PK_FILE_LEN, "public key file size");
    CHECK_OK(vt_sign_read_secret_key(sk_path, &back));
    CHECK(memcmp(&back, &kp, sizeof kp) == 0, "secret key round trip");
    CHECK_OK(vt_sign_read_public_key(pk_path, pk));
    CHECK(memcmp(pk, kp.pk, 32) == 0, "public key round trip");

    /* the file bytes are exactly the documented layout */
    uint8_t img[VT_SIGN_SK_FILE_LEN];
    FILE *f = fopen(sk_path, "rb");
    CHECK(f && fread(img, 1, sizeof img, f) == sizeof img, "read secret key file");
    if (f) fclose(f);
    CHECK(memcmp(img, "VTSK", 4) == 0 && vt_get_u32le(img + 4) == 1 && memcmp(img + 8, kp.sk, 64) == 0 &&
              memcmp(img + 72, kp.pk, 32) == 0,
          "secret key file layout");
    uint8_t pimg[VT_SIGN_PK_FILE_LEN];
    f = fopen(pk_path, "rb");
    CHECK(f && fread(pimg, 1, sizeof pimg, f) == sizeof pimg, "read public key file");
    if (f) fclose(f);
    CHECK(memcmp(pimg, "VTPK", 4) == 0 && vt_get_u32le(pimg + 4) == 1 && memcmp(pimg + 8, kp.pk, 32) == 0,
          "public key file layout");

    /* refuse to overwrite without force; overwrite with force */
    CHECK(vt_sign_write_secret_key(sk_path, &kp2, 0) == VT_ERR_IO, "no overwrite without force");
    CHECK(vt_sign_write_public_key(pk_path, kp2.pk, 0) == VT_ERR_IO, "no overwrite without force (pk)");
    CHECK_OK(vt_sign_read_secret_key(sk_path, &back));
    CHECK(memcmp(&back, &kp, sizeof kp) == 0, "original secret key kept");
    CHECK_OK(vt_sign_write_secret_key(sk_path, &kp2, 1));
    CHECK_OK(vt_sign_read_secret_key(sk_path, &back));
    CHECK(memcmp(&back, &kp2, sizeof kp2) == 0, "forced overwrite");
    CHECK(stat(sk_path, &st) == 0 && (st.st_mode & 07777) == 0600, "mode after overwrite");
    CHECK_OK(vt_sign_write_public_key(pk_path, kp2.pk, 1));
    CHECK_OK(vt_sign_read_public_key(pk_path, pk));
    CHECK(memcmp(pk, kp2.pk, 32) == 0, "forced overwrite (pk)");
    /* a file that is not a key file is not overwritten either */
    path_in(p, sizeof p, "precious");
    CHECK(write_raw(p, "data", 4) == 0, "write precious");
    CHECK(vt_sign_write_secret_key(p, &kp, 0) == VT_ERR_IO, "no overwrite of another file");
    CHECK(stat(p, &st) == 0 && st.st_size == 4, "other file intact");
    unlink(p);
    /* writing into a missing directory fails cleanly */
    path_in(p, sizeof p, "missing/dir/k.sk");
    CHECK(vt_sign_write_secret_key(p, &kp, 0) == VT_ERR_IO, "missing directory");
    path_in(p, sizeof p, "absent.sk");
    CHECK(vt_sign_read_secret_key(p, &back) == VT_ERR_IO, "missing file is an I/O error");

    /* hostile files: VT_ERR_FORMAT, never a crash */
    uint8_t good[VT_SIGN_SK_FILE_LEN];
    vt_sign_encode_secret_key(&kp, good);
    uint8_t goodp[VT_SIGN_PK_FILE_LEN];
    vt_sign_encode_public_key(kp.pk, goodp);
    path_in(p, sizeof p, "hostile");
    long wrong = 0;
    for (size_t n = 0; n < sizeof good; n++) { /* every truncation */
        write_raw(p, good, n);
        wrong += vt_sign_read_secret_key(p, &back) != VT_ERR_FORMAT;
    }
    for (size_t n = 0; n < sizeof goodp; n++) {
        write_raw(p, goodp, n);
        wrong += vt_sign_read_public_key(p, pk) != VT_ERR_FORMAT;
    }
    CHECK(wrong == 0, "%ld truncated key files not rejected as format errors", wrong);

    wrong = 0;
    uint8_t big[1 << 16];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)vt_rng_next(rng);
    memcpy(big, good, sizeof good);
    size_t over[] = {sizeof good + 1, sizeof good + 100, sizeof big};
    for (size_t k = 0; k < 3; k++) { /* oversized: valid prefix plus junk */
        write_raw(p, big, over[k]);
        wrong += vt_sign_read_secret_key(p, &back) != VT_ERR_FORMAT;
    }
    memcpy(big, goodp, sizeof goodp);
    for (size_t k = 0; k < 3; k++) {
        write_raw(p, big, over[k]);
        wrong += vt_sign_read_public_key(p, pk) != VT_ERR_FORMAT;
    }
    CHECK(wrong == 0, "%ld oversized key files not rejected as format errors", wrong);

    wrong = 0;
    for (int r = 0; r < 50; r++) { /* random garbage of plausible and exact lengths */
        size_t n = r < 20 ? sizeof good : r < 40 ? sizeof goodp : vt_rng_next(rng) % 300;
        for (size_t i = 0; i < n; i++) big[i] = (uint8_t)vt_rng_next(rng);
        if (r % 2) memcpy(big, r < 20 ? "VTSK\1\0\0\0" : "VTPK\1\0\0\0", n < 8 ? n : 8);
        write_raw(p, big, n);
        wrong += vt_sign_read_secret_key(p, &back) != VT_ERR_FORMAT;
        /* A 40-byte file with a correct header whose 32 random bytes happen to be
         * a valid Ed25519 point (about 1 in 16) is a well-formed public key file. */
        int wellformed = n == sizeof goodp && memcmp(big, "VTPK\1\0\0\0", 8) == 0 &&
                         crypto_core_ed25519_is_valid_point(big + 8);
        vt_err e = vt_sign_read_public_key(p, pk);
        wrong += wellformed ? e != VT_OK : e != VT_ERR_FORMAT;
    }
    CHECK(wrong == 0, "%ld garbage key files not rejected as format errors", wrong);

    /* every single-bit corruption of a secret key file is detected (the seed
     * must derive both stored keys); public key files: header bits always,
     * key bits when the result is not a valid point. */
    wrong = 0;
    for (size_t bit = 0; bit < 8 * sizeof good; bit++) {
        good[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        wrong += vt_sign_decode_secret_key(good, sizeof good, &back) != VT_ERR_FORMAT;
        good[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    for (size_t bit = 0; bit < 64; bit++) {
        goodp[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        wrong += vt_sign_decode_public_key(goodp, sizeof goodp, pk) != VT_ERR_FORMAT;
        goodp[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    CHECK(wrong == 0, "%ld corrupted key images accepted", wrong);
    CHECK_OK(vt_sign_decode_secret_key(good, sizeof good, &back));
    CHECK_OK(vt_sign_decode_public_key(goodp, sizeof goodp, pk));
    /* version 2 and a secret key file read as a public key */
    good[4] = 2;
    CHECK(vt_sign_decode_secret_key(good, sizeof good, &back) == VT_ERR_FORMAT, "version 2");
    CHECK(vt_sign_read_public_key(sk_path, pk) == VT_ERR_FORMAT, "secret key file as public key");
    CHECK(vt_sign_read_secret_key(pk_path, &back) == VT_ERR_FORMAT, "public key file as secret key");
    /* an all-zero key (small order point) is not a public key */
    memset(goodp + 8, 0, 32);
    CHECK(vt_sign_decode_public_key(goodp, sizeof goodp, pk) == VT_ERR_FORMAT, "zero public key");
    /* a directory is not a key file */
    CHECK(vt_sign_read_secret_key(g_dir, &back) != VT_OK, "directory");
    unlink(p);

    /* no temporary files are left behind */
    int leftovers = 0;
    DIR *dir = opendir(g_dir);
    CHECK(dir != NULL, "opendir");
    for (struct dirent *de; dir && (de = readdir(dir)) != NULL;) {
        const char *nm = de->d_name;
        if (!strcmp(nm, ".") || !strcmp(nm, "..") || !strcmp(nm, "trainer.sk") || !strcmp(nm, "trainer.pk"))
            continue;
        leftovers++;
        fprintf(stderr, "leftover file %s\n", nm);
    }
    if (dir) closedir(dir);
    CHECK(leftovers == 0, "%d leftover files", leftovers);
    unlink(sk_path);
    unlink(pk_path);
    vt_keypair_wipe(&kp);
    vt_keypair_wipe(&kp2);
    vt_keypair_wipe(&back);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/vt_test_sign.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    vt_rng rng = {vt_test_seed(8032)};
    test_rfc8032_vector1();
    test_sign_verify(&rng);
    test_key_files(&rng);
    if (rmdir(g_dir) != 0) {
        vt_test_failed++;
        fprintf(stderr, "FAIL: could not remove %s: %s\n", g_dir, strerror(errno));
    }
    return vt_test_finish("test_sign");
}
