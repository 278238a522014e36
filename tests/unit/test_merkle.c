/* test_merkle.c - RFC 9162 Merkle tree: roots against a naive recursive
 * implementation written from the RFC text (hashing with libsodium, not the
 * library's OpenSSL path), inclusion proofs and their rejection under every
 * single alteration, and known answers computed with Python's hashlib. */
#include "vt_test.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "common/vt_bytes.h"
#include "common/vt_hash.h"
#include "merkle/vt_merkle.h"

typedef uint8_t hash_t[32];

/* ------------------------------------------------------------------ naive RFC 9162 */

static void n_leaf(const void *p, size_t n, uint8_t out[32])
{
    crypto_hash_sha256_state s;
    const uint8_t z = 0x00;
    crypto_hash_sha256_init(&s);
    crypto_hash_sha256_update(&s, &z, 1);
    crypto_hash_sha256_update(&s, p, n);
    crypto_hash_sha256_final(&s, out);
}

static void n_node(const uint8_t l[32], const uint8_t r[32], uint8_t out[32])
{
    crypto_hash_sha256_state s;
    const uint8_t one = 0x01;
    crypto_hash_sha256_init(&s);
    crypto_hash_sha256_update(&s, &one, 1);
    crypto_hash_sha256_update(&s, l, 32);
    crypto_hash_sha256_update(&s, r, 32);
    crypto_hash_sha256_final(&s, out);
}

static uint64_t n_split(uint64_t n) /* largest power of two < n, n > 1 */
{
    uint64_t k = 1;
    while (k * 2 < n) k *= 2;
    return k;
}

/* MTH over leaf hashes D[0:n]. */
static void n_mth(const hash_t *d, uint64_t n, uint8_t out[32])
{
    if (n == 0) {
        crypto_hash_sha256(out, (const unsigned char *)"", 0);
        return;
    }
    if (n == 1) {
        memcpy(out, d[0], 32);
        return;
    }
    uint64_t k = n_split(n);
    uint8_t l[32], r[32];
    n_mth(d, k, l);
    n_mth(d + k, n - k, r);
    n_node(l, r, out);
}

/* PATH(m, D[n]) appended at path[*len...]. */
static void n_path(uint64_t m, const hash_t *d, uint64_t n, hash_t *path, size_t *len)
{
    if (n <= 1) return;
    uint64_t k = n_split(n);
    if (m < k) {
        n_path(m, d, k, path, len);
        n_mth(d + k, n - k, path[(*len)++]);
    } else {
        n_path(m - k, d + k, n - k, path, len);
        n_mth(d, k, path[(*len)++]);
    }
}

/* Shape of the audit path of leaf m in a tree of n leaves, from the RFC's
 * PATH recursion: returns the length and sets bit j of *bits when the j-th
 * (bottom-up) sibling is on the left. */
static int n_shape(uint64_t m, uint64_t n, uint64_t *bits)
{
    if (n <= 1) {
        *bits = 0;
        return 0;
    }
    uint64_t k = n_split(n);
    int len;
    if (m < k) {
        len = n_shape(m, k, bits);
    } else {
        len = n_shape(m - k, n - k, bits);
        *bits |= 1ULL << len;
    }
    return len + 1;
}

static long g_same_shape_sizes;

static void make_leaves(hash_t *d, uint64_t n, uint64_t salt)
{
    for (uint64_t i = 0; i < n; i++) {
        uint8_t b[16];
        vt_put_u64le(b, i);
        vt_put_u64le(b + 8, salt);
        n_leaf(b, sizeof b, d[i]);
    }
}

static int hex_eq(const uint8_t h[32], const char *hex)
{
    uint8_t want[32];
    if (vt_unhex(hex, want, 32) != VT_OK) return 0;
    return memcmp(h, want, 32) == 0;
}

/* ------------------------------------------------------------------ tests */

static void test_known_answers(void)
{
    uint8_t h[32], root[32];
    const char *empty_leaf = "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d";

    CHECK_OK(vt_merkle_leaf_hash("", 0, h));
    CHECK(hex_eq(h, empty_leaf), "leaf hash of the empty string");
    CHECK_OK(vt_merkle_leaf_hash(NULL, 0, h));
    CHECK(hex_eq(h, empty_leaf), "leaf hash of (NULL, 0)");

    vt_merkle t;
    vt_merkle_init(&t);
    CHECK_OK(vt_merkle_root(&t, root));
    CHECK(hex_eq(root, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
          "empty tree root is SHA-256 of the empty string");
    CHECK_OK(vt_merkle_root_of(NULL, 0, root));
    CHECK(hex_eq(root, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
          "root_of 0 leaves");

    CHECK_OK(vt_merkle_append(&t, h));
    CHECK_OK(vt_merkle_root(&t, root));
    CHECK(hex_eq(root, empty_leaf), "root of the single leaf \"\"");
    hash_t l1[1];
    memcpy(l1[0], h, 32);
    CHECK_OK(vt_merkle_root_of((const hash_t *)l1, 1, root));
    CHECK(hex_eq(root, empty_leaf), "root_of the single leaf \"\"");
    vt_merkle_free(&t);

    /* Seven leaves: the one-byte strings 0x00..0x06 (hashlib). */
    vt_merkle_init(&t);
    for (int i = 0; i < 7; i++) {
        uint8_t b = (uint8_t)i;
        CHECK_OK(vt_merkle_leaf_hash(&b, 1, h));
        CHECK_OK(vt_merkle_append(&t, h));
    }
    CHECK_OK(vt_merkle_root(&t, root));
    CHECK(hex_eq(root, "3560191803028444b232018ac047fdb561c09c23a7a6876c85e08b5e4d48e9f3"),
          "7-leaf known answer");
    vt_merkle_free(&t);

    /* 1000 leaves "leaf 0" .. "leaf 999" (hashlib). */
    vt_merkle_init(&t);
    for (int i = 0; i < 1000; i++) {
        char s[32];
        int n = snprintf(s, sizeof s, "leaf %d", i);
        CHECK_OK(vt_merkle_leaf_hash(s, (size_t)n, h));
        CHECK_OK(vt_merkle_append(&t, h));
    }
    CHECK_OK(vt_merkle_root(&t, root));
    CHECK(hex_eq(root, "2ff33fb9d8f14f89ca306289633336a168ff3f4532e8f741a0019dcb4c1d60a1"),
          "1000-leaf known answer");
    vt_merkle_free(&t);
}

static void test_step_leaf(void)
{
    uint8_t st[32], lg[32], out[32], want[32], buf[VT_STEP_LEAF_BYTES];
    memset(st, 0x11, 32);
    memset(lg, 0x22, 32);
    uint64_t s = 0x0102030405060708ULL;

    CHECK_OK(vt_step_leaf(s, st, 1, lg, out));
    /* hashlib: sha256(b'\0' + struct.pack('<Q', s) + b'\x11'*32 + b'\x22'*32) */
    CHECK(hex_eq(out, "ceb3ea565ac644d70cec7de008f522b8d996f77935ec5c8ec84fd80ab5da163f"),
          "step leaf known answer (with state)");
    /* Independent construction of the same bytes. */
    buf[0] = 0;
    for (int i = 0; i < 8; i++) buf[1 + i] = (uint8_t)(s >> (8 * i));
    memcpy(buf + 9, st, 32);
    memcpy(buf + 41, lg, 32);
    crypto_hash_sha256(want, buf, sizeof buf);
    CHECK(memcmp(out, want, 32) == 0, "step leaf = SHA-256(0x00 || s || state || log)");
    n_leaf(buf + 1, sizeof buf - 1, want);
    CHECK(memcmp(out, want, 32) == 0, "step leaf = RFC leaf hash of the 72-byte body");

    /* No state committed: 0xFF filler; state_hash is not read (NULL allowed). */
    CHECK_OK(vt_step_leaf(7, NULL, 0, lg, out));
    CHECK(hex_eq(out, "b32e9f83dafa8fda960a20920396233bd8fe5667cfce78587ce0b0eebca66d1a"),
          "step leaf known answer (no state)");
    uint8_t out2[32];
    CHECK_OK(vt_step_leaf(7, st, 0, lg, out2));
    CHECK(memcmp(out, out2, 32) == 0, "has_state == 0 ignores state_hash");
    uint8_t ff[32];
    memset(ff, 0xFF, 32);
    CHECK_OK(vt_step_leaf(7, ff, 1, lg, out2));
    CHECK(memcmp(out, out2, 32) == 0, "absent state is encoded as 32 bytes of 0xFF");
    CHECK_OK(vt_step_leaf(8, NULL, 0, lg, out2));
    CHECK(memcmp(out, out2, 32) != 0, "step number is bound");
    CHECK(vt_step_leaf(7, NULL, 1, lg, out2) == VT_ERR_ARG, "has_state with NULL state");
    CHECK(vt_step_leaf(7, st, 1, NULL, out2) == VT_ERR_ARG, "NULL log hash");
}

static void test_roots(void)
{
    enum { MAXN = 300 };
    hash_t *d = malloc(sizeof(hash_t) * MAXN);
    CHECK(d != NULL, "malloc");
    if (!d) return;
    make_leaves(d, MAXN, 1);
    vt_merkle t;
    vt_merkle_init(&t);
    int bad_inc = 0, bad_of = 0;
    for (uint64_t n = 1; n <= MAXN; n++) {
        uint8_t want[32], got[32], got2[32];
        CHECK_OK(vt_merkle_append(&t, d[n - 1]));
        CHECK(vt_merkle_size(&t) == n, "size %llu", (unsigned long long)n);
        n_mth(d, n, want);
        CHECK_OK(vt_merkle_root(&t, got));
        CHECK_OK(vt_merkle_root_of((const hash_t *)d, n, got2));
        if (n <= 20) {
            CHECK(memcmp(want, got, 32) == 0, "incremental root, size %llu", (unsigned long long)n);
            CHECK(memcmp(want, got2, 32) == 0, "root_of, size %llu", (unsigned long long)n);
        } else {
            bad_inc += memcmp(want, got, 32) != 0;
            bad_of += memcmp(want, got2, 32) != 0;
        }
    }
    CHECK(bad_inc == 0, "%d incremental roots wrong for sizes 21..%d", bad_inc, MAXN);
    CHECK(bad_of == 0, "%d root_of results wrong for sizes 21..%d", bad_of, MAXN);
    uint8_t leaf[32];
    CHECK_OK(vt_merkle_leaf(&t, 17, leaf));
    CHECK(memcmp(leaf, d[17], 32) == 0, "stored leaf");
    CHECK(vt_merkle_leaf(&t, MAXN, leaf) == VT_ERR_ARG, "leaf out of range");

    /* free leaves an empty, reusable tree */
    vt_merkle_free(&t);
    CHECK(vt_merkle_size(&t) == 0, "size after free");
    for (int i = 0; i < 3; i++) CHECK_OK(vt_merkle_append(&t, d[i]));
    uint8_t want[32], got[32];
    n_mth(d, 3, want);
    CHECK_OK(vt_merkle_root(&t, got));
    CHECK(memcmp(want, got, 32) == 0, "reuse after free");
    vt_merkle_free(&t);
    vt_merkle_free(&t); /* double free of an emptied tree is harmless */
    free(d);
}

/* Every single alteration of a valid proof must be rejected. Returns the number
 * of alterations that were wrongly accepted. */
static long tamper_all(const uint8_t leaf[32], uint64_t idx, uint64_t n, hash_t *path, size_t len,
                       const uint8_t root[32], vt_rng *rng)
{
    long bad = 0;
    uint8_t x[32];
    /* any byte of the path */
    for (size_t i = 0; i < len; i++)
        for (int b = 0; b < 32; b++) {
            uint8_t flip = (uint8_t)(1u << (vt_rng_next(rng) % 8));
            path[i][b] ^= flip;
            bad += vt_merkle_verify(leaf, idx, n, (const hash_t *)path, len, root) == 0;
            path[i][b] ^= flip;
        }
    /* any byte of the leaf and of the root */
    for (int b = 0; b < 32; b++) {
        uint8_t flip = (uint8_t)(1u << (vt_rng_next(rng) % 8));
        memcpy(x, leaf, 32);
        x[b] ^= flip;
        bad += vt_merkle_verify(x, idx, n, (const hash_t *)path, len, root) == 0;
        memcpy(x, root, 32);
        x[b] ^= flip;
        bad += vt_merkle_verify(leaf, idx, n, (const hash_t *)path, len, x) == 0;
    }
    /* the index: every other index of the tree and some out of range */
    for (uint64_t j = 0; j < n + 3; j++)
        if (j != idx) bad += vt_merkle_verify(leaf, j, n, (const hash_t *)path, len, root) == 0;
    bad += vt_merkle_verify(leaf, UINT64_MAX, n, (const hash_t *)path, len, root) == 0;
    bad += vt_merkle_verify(leaf, idx ^ (1ULL << 63), n, (const hash_t *)path, len, root) == 0;
    /* the size: every other size up to 2n+70, 0 and huge ones. RFC 9162 roots do
     * not encode the tree size: a path also verifies under another size whose
     * audit path for this index has the same shape (length and left/right
     * pattern), e.g. leaf 0 of 3 and of 4 leaves. That is why the size must come
     * from the signed commitment. Any size whose shape differs must fail, and a
     * size with the same shape must give the same answer as the true size. */
    uint64_t want_shape = 0;
    int want_len = n_shape(idx, n, &want_shape);
    for (uint64_t m = 0; m <= 2 * n + 70; m++) {
        if (m == n) continue;
        uint64_t sh = 0;
        int same = idx < m && n_shape(idx, m, &sh) == want_len && sh == want_shape;
        int ok = vt_merkle_verify(leaf, idx, m, (const hash_t *)path, len, root) == 0;
        bad += ok != same;
        g_same_shape_sizes += same;
    }
    bad += vt_merkle_verify(leaf, idx, UINT64_MAX, (const hash_t *)path, len, root) == 0;
    bad += vt_merkle_verify(leaf, idx, n | (1ULL << 40), (const hash_t *)path, len, root) == 0;
    /* shortened: drop the last hash, drop the first hash, empty */
    if (len > 0) {
        bad += vt_merkle_verify(leaf, idx, n, (const hash_t *)path, len - 1, root) == 0;
        bad += vt_merkle_verify(leaf, idx, n, (const hash_t *)path + 1, len - 1, root) == 0;
        bad += vt_merkle_verify(leaf, idx, n, NULL, 0, root) == 0;
    }
    /* lengthened: append the root, zeros or random; prepend a hash */
    hash_t longer[VT_MERKLE_MAX_PATH + 2];
    memcpy(longer, path, len * 32);
    memcpy(longer[len], root, 32);
    bad += vt_merkle_verify(leaf, idx, n, (const hash_t *)longer, len + 1, root) == 0;
    memset(longer[len], 0, 32);
    bad += vt_merkle_verify(leaf, idx, n, (const hash_t *)longer, len + 1, root) == 0;
    for (int b = 0; b < 32; b++) longer[len][b] = (uint8_t)vt_rng_next(rng);
    bad += vt_merkle_verify(leaf, idx, n, (const hash_t *)longer, len + 1, root) == 0;
    memcpy(longer[0], leaf, 32);
    memcpy(longer + 1, path, len * 32);
    bad += vt_merkle_verify(leaf, idx, n, (const hash_t *)longer, len + 1, root) == 0;
    /* swapped neighbours */
    for (size_t i = 0; i + 1 < len; i++) {
        memcpy(longer, path, len * 32);
        memcpy(longer[i], path[i + 1], 32);
        memcpy(longer[i + 1], path[i], 32);
        if (memcmp(path[i], path[i + 1], 32) != 0)
            bad += vt_merkle_verify(leaf, idx, n, (const hash_t *)longer, len, root) == 0;
    }
    return bad;
}

static void test_proofs(vt_rng *rng)
{
    enum { MAXN = 64 };
    hash_t d[MAXN], path[VT_MERKLE_MAX_PATH], want[VT_MERKLE_MAX_PATH];
    make_leaves(d, MAXN, 2);
    vt_merkle t;
    vt_merkle_init(&t);
    long proofs = 0, wrong_path = 0, not_verified = 0, accepted_tampered = 0, wrong_len = 0;
    for (uint64_t n = 1; n <= MAXN; n++) {
        CHECK_OK(vt_merkle_append(&t, d[n - 1]));
        uint8_t root[32];
        CHECK_OK(vt_merkle_root(&t, root));
        for (uint64_t i = 0; i < n; i++) {
            size_t len = 99, wlen = 0;
            vt_err e = vt_merkle_prove(&t, i, path, VT_MERKLE_MAX_PATH, &len);
            CHECK(e == VT_OK, "prove %llu/%llu: %s", (unsigned long long)i, (unsigned long long)n,
                  vt_errmsg());
            if (e) continue;
            proofs++;
            n_path(i, (const hash_t *)d, n, want, &wlen);
            wrong_len += len != wlen || (int)len != vt_merkle_path_len(i, n);
            wrong_path += len != wlen || memcmp(path, want, len * 32) != 0;
            not_verified += vt_merkle_verify(d[i], i, n, (const hash_t *)path, len, root) != 0;
            accepted_tampered += tamper_all(d[i], i, n, path, len, root, rng);
        }
    }
    CHECK(proofs == MAXN * (MAXN + 1) / 2, "%ld proofs", proofs);
    CHECK(wrong_len == 0, "%ld proofs of the wrong length", wrong_len);
    CHECK(wrong_path == 0, "%ld proofs differ from the RFC's PATH", wrong_path);
    CHECK(not_verified == 0, "%ld valid proofs rejected", not_verified);
    CHECK(accepted_tampered == 0, "%ld altered proofs accepted", accepted_tampered);
    CHECK(g_same_shape_sizes > 0, "the size-binding caveat is exercised (%ld cases)", g_same_shape_sizes);
    printf("proofs: %ld; altered sizes with an identical path shape (accepted, as in RFC 9162): %ld\n",
           proofs, g_same_shape_sizes);

    /* argument errors */
    size_t len = 0;
    CHECK(vt_merkle_prove(&t, MAXN, path, VT_MERKLE_MAX_PATH, &len) == VT_ERR_ARG, "index == size");
    CHECK(vt_merkle_prove(&t, 5, path, 2, &len) == VT_ERR_LIMIT, "buffer too small");
    CHECK(vt_merkle_path_len(MAXN, MAXN) == -1 && vt_merkle_path_len(0, 1) == 0 &&
              vt_merkle_path_len(0, MAXN) == 6 && vt_merkle_path_len(4, 5) == 1,
          "path lengths");
    vt_merkle_free(&t);
    vt_merkle empty;
    vt_merkle_init(&empty);
    CHECK(vt_merkle_prove(&empty, 0, path, VT_MERKLE_MAX_PATH, &len) == VT_ERR_ARG, "empty tree");
    uint8_t r0[32];
    CHECK_OK(vt_merkle_root(&empty, r0));
    CHECK(vt_merkle_verify(r0, 0, 0, NULL, 0, r0) == -1, "size 0 never verifies");
    /* one-leaf tree: empty path */
    CHECK(vt_merkle_verify(d[0], 0, 1, NULL, 0, d[0]) == 0, "single leaf, empty path");
    CHECK(vt_merkle_verify(d[0], 0, 1, (const hash_t *)d, 1, d[0]) == -1, "single leaf, extra hash");
    /* an over-long path is rejected without reading it all */
    static hash_t huge[VT_MERKLE_MAX_PATH + 1];
    CHECK(vt_merkle_verify(d[0], 0, UINT64_MAX, (const hash_t *)huge, VT_MERKLE_MAX_PATH + 1, d[0]) == -1,
          "path longer than 64");
}

/* Larger trees: random sizes and indices against the naive implementation,
 * including sizes around powers of two. */
static void test_large(vt_rng *rng)
{
    enum { MAXN = 5000 };
    hash_t *d = malloc(sizeof(hash_t) * MAXN);
    CHECK(d != NULL, "malloc");
    if (!d) return;
    make_leaves(d, MAXN, 3);
    static const uint64_t sizes[] = {127, 128, 129, 255, 256, 257, 1000, 1023, 1024, 1025, 4097, MAXN};
    long bad = 0, checked = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        uint64_t n = sizes[si];
        vt_merkle t;
        vt_merkle_init(&t);
        for (uint64_t i = 0; i < n; i++) CHECK_OK(vt_merkle_append(&t, d[i]));
        uint8_t root[32], want[32];
        CHECK_OK(vt_merkle_root(&t, root));
        n_mth(d, n, want);
        CHECK(memcmp(root, want, 32) == 0, "root of %llu leaves", (unsigned long long)n);
        for (int r = 0; r < 40; r++) {
            uint64_t i = r == 0 ? 0 : r == 1 ? n - 1 : vt_rng_next(rng) % n;
            hash_t path[VT_MERKLE_MAX_PATH], wpath[VT_MERKLE_MAX_PATH];
            size_t len = 0, wlen = 0;
            CHECK_OK(vt_merkle_prove(&t, i, path, VT_MERKLE_MAX_PATH, &len));
            n_path(i, (const hash_t *)d, n, wpath, &wlen);
            bad += len != wlen || memcmp(path, wpath, len * 32) != 0;
            bad += vt_merkle_verify(d[i], i, n, (const hash_t *)path, len, root) != 0;
            path[vt_rng_next(rng) % len][vt_rng_next(rng) % 32] ^= 0x80;
            bad += vt_merkle_verify(d[i], i, n, (const hash_t *)path, len, root) == 0;
            checked++;
        }
        vt_merkle_free(&t);
    }
    CHECK(bad == 0, "%ld of %ld large-tree proofs wrong", bad, checked);
    free(d);
}

/* A run-sized tree: 2^20 + 3 leaves appended, root and proofs (speed check). */
static void test_run_sized(void)
{
    const uint64_t n = (1u << 20) + 3;
    vt_merkle t;
    vt_merkle_init(&t);
    uint8_t lg[32] = {0}, leaf[32];
    vt_err e = VT_OK;
    for (uint64_t s = 0; s < n && !e; s++) {
        lg[0] = (uint8_t)s;
        e = vt_step_leaf(s, NULL, 0, lg, leaf);
        if (!e) e = vt_merkle_append(&t, leaf);
    }
    CHECK(e == VT_OK, "building a %llu-leaf tree: %s", (unsigned long long)n, vt_errmsg());
    uint8_t root[32];
    CHECK_OK(vt_merkle_root(&t, root));
    hash_t path[VT_MERKLE_MAX_PATH];
    size_t len = 0;
    uint64_t idx[] = {0, 1, 12345, (1u << 20) - 1, 1u << 20, n - 1};
    for (size_t k = 0; k < sizeof idx / sizeof idx[0]; k++) {
        CHECK_OK(vt_merkle_prove(&t, idx[k], path, VT_MERKLE_MAX_PATH, &len));
        CHECK_OK(vt_merkle_leaf(&t, idx[k], leaf));
        CHECK(vt_merkle_verify(leaf, idx[k], n, (const hash_t *)path, len, root) == 0,
              "proof of step %llu", (unsigned long long)idx[k]);
    }
    vt_merkle_free(&t);
}

int main(void)
{
    if (sodium_init() < 0) {
        fprintf(stderr, "sodium_init failed\n");
        return 1;
    }
    vt_rng rng = {vt_test_seed(20240917)};
    test_known_answers();
    test_step_leaf();
    test_roots();
    test_proofs(&rng);
    test_large(&rng);
    test_run_sized();
    return vt_test_finish("test_merkle");
}
