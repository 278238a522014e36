/* vt_merkle.c - RFC 9162 Merkle tree, inclusion proofs and the step leaf. */
#include "vt_merkle.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_debug.h"

vt_err vt_merkle_leaf_hash(const void *p, size_t n, uint8_t out[VT_HASH_LEN])
{
    static const uint8_t prefix = 0x00;
    VT_RETURN_ERROR_IF(!out || (n && !p), VT_ERR_ARG, "vt_merkle_leaf_hash: NULL argument");
    vt_sha256_ctx c;
    VT_FORWARD_IF_ERROR(vt_sha256_init(&c));
    vt_err e = vt_sha256_update(&c, &prefix, 1);
    if (!e) e = vt_sha256_update(&c, p, n);
    if (e) {
        vt_sha256_abort(&c);
        return e;
    }
    return vt_sha256_final(&c, out);
}

vt_err vt_merkle_node_hash(const uint8_t left[VT_HASH_LEN], const uint8_t right[VT_HASH_LEN],
                           uint8_t out[VT_HASH_LEN])
{
    uint8_t buf[1 + 2 * VT_HASH_LEN];
    VT_RETURN_ERROR_IF(!left || !right || !out, VT_ERR_ARG, "vt_merkle_node_hash: NULL argument");
    buf[0] = 0x01;
    memcpy(buf + 1, left, VT_HASH_LEN);
    memcpy(buf + 1 + VT_HASH_LEN, right, VT_HASH_LEN);
    return vt_sha256(buf, sizeof buf, out);
}

vt_err vt_step_leaf(uint64_t s, const uint8_t state_hash[VT_HASH_LEN], int has_state,
                    const uint8_t log_hash[VT_HASH_LEN], uint8_t out[VT_HASH_LEN])
{
    uint8_t buf[VT_STEP_LEAF_BYTES];
    VT_RETURN_ERROR_IF(!log_hash || !out || (has_state && !state_hash), VT_ERR_ARG,
                       "vt_step_leaf: NULL argument");
    buf[0] = 0x00;
    vt_put_u64le(buf + 1, s);
    if (has_state)
        memcpy(buf + 9, state_hash, VT_HASH_LEN);
    else
        memset(buf + 9, VT_STEP_NO_STATE_BYTE, VT_HASH_LEN);
    memcpy(buf + 9 + VT_HASH_LEN, log_hash, VT_HASH_LEN);
    return vt_sha256(buf, sizeof buf, out);
}

/* ------------------------------------------------------------------ tree */

void vt_merkle_init(vt_merkle *t)
{
    if (t) memset(t, 0, sizeof *t);
}

void vt_merkle_free(vt_merkle *t)
{
    if (!t) return;
    for (int l = 0; l < VT_MERKLE_MAX_LEVELS; l++) free(t->lv[l].h);
    memset(t, 0, sizeof *t);
}

uint64_t vt_merkle_size(const vt_merkle *t) { return t ? t->lv[0].n : 0; }

static vt_err level_reserve(vt_merkle_level_ *lv)
{
    if (lv->n < lv->cap) return VT_OK;
    uint64_t cap = lv->cap ? lv->cap * 2 : 64;
    VT_RETURN_ERROR_IF(cap < lv->cap || cap > SIZE_MAX / VT_HASH_LEN, VT_ERR_LIMIT,
                       "merkle tree too large");
    void *p = realloc(lv->h, (size_t)cap * VT_HASH_LEN);
    VT_RETURN_ERROR_IF(!p, VT_ERR_NOMEM, "merkle tree: out of memory (%llu hashes)",
                       (unsigned long long)cap);
    lv->h = p;
    lv->cap = cap;
    return VT_OK;
}

vt_err vt_merkle_append(vt_merkle *t, const uint8_t leaf_hash[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(!t || !leaf_hash, VT_ERR_ARG, "vt_merkle_append: NULL argument");
    VT_RETURN_ERROR_IF(t->lv[0].n == UINT64_MAX, VT_ERR_LIMIT, "merkle tree full");

    /* Compute every new hash first, then reserve, then commit: a failure leaves
     * the tree unchanged. add[l] is the hash appended to level l. */
    uint8_t add[VT_MERKLE_MAX_LEVELS][VT_HASH_LEN];
    int nadd = 1;
    memcpy(add[0], leaf_hash, VT_HASH_LEN);
    for (int l = 0; l + 1 < VT_MERKLE_MAX_LEVELS; l++) {
        uint64_t newn = t->lv[l].n + 1; /* level l after the append */
        if (newn % 2) break;            /* no new complete pair at this level */
        VT_FORWARD_IF_ERROR(vt_merkle_node_hash(t->lv[l].h[newn - 2], add[l], add[l + 1]));
        nadd = l + 2;
    }
    for (int l = 0; l < nadd; l++) VT_FORWARD_IF_ERROR(level_reserve(&t->lv[l]));
    for (int l = 0; l < nadd; l++) memcpy(t->lv[l].h[t->lv[l].n++], add[l], VT_HASH_LEN);
#if VT_DEBUG >= 1
    /* each level holds the complete pairs of the one below */
    for (int l = 0; l + 1 < nadd; l++) VT_ASSERT(t->lv[l + 1].n == t->lv[l].n / 2);
#endif
    return VT_OK;
}

vt_err vt_merkle_leaf(const vt_merkle *t, uint64_t i, uint8_t out[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(!t || !out, VT_ERR_ARG, "vt_merkle_leaf: NULL argument");
    VT_RETURN_ERROR_IF(i >= t->lv[0].n, VT_ERR_ARG, "leaf %llu out of range (size %llu)",
                       (unsigned long long)i, (unsigned long long)t->lv[0].n);
    memcpy(out, t->lv[0].h[i], VT_HASH_LEN);
    return VT_OK;
}

/* Largest power of two strictly less than n (n >= 2). */
static uint64_t split_point(uint64_t n)
{
    VT_ASSERT(n >= 2);
    uint64_t k = 1;
    while (k < n - k) k <<= 1; /* k*2 < n without overflow */
    VT_ASSERT(k < n && n - k <= k && (k & (k - 1)) == 0);
    return k;
}

static int log2_exact(uint64_t n) /* n a power of two */
{
    int l = 0;
    while (n > 1) {
        n >>= 1;
        l++;
    }
    return l;
}

/* MTH(D[a:b]) for 0 <= a < b <= size. Every range that the root and the audit
 * paths ask for starts at a multiple of the largest power of two not above its
 * length, so complete subtrees are looked up and only the right-hand "tails"
 * are hashed: O(log n) hashes. The generic recursion handles any range. */
static vt_err range_hash(const vt_merkle *t, uint64_t a, uint64_t b, uint8_t out[VT_HASH_LEN])
{
    VT_ASSERT(a < b && b <= t->lv[0].n);
    uint64_t n = b - a;
    if ((n & (n - 1)) == 0) {
        int l = log2_exact(n);
        if ((a & (n - 1)) == 0) {
            uint64_t idx = a >> l;
            if (idx >= t->lv[l].n)
                VT_RETURN_ERROR(VT_ERR_INTERNAL, "merkle: missing subtree %d/%llu", l,
                                (unsigned long long)idx);
            memcpy(out, t->lv[l].h[idx], VT_HASH_LEN);
            return VT_OK;
        }
    }
    uint64_t k = split_point(n);
    uint8_t left[VT_HASH_LEN], right[VT_HASH_LEN];
    VT_FORWARD_IF_ERROR(range_hash(t, a, a + k, left));
    VT_FORWARD_IF_ERROR(range_hash(t, a + k, b, right));
    return vt_merkle_node_hash(left, right, out);
}

vt_err vt_merkle_root(const vt_merkle *t, uint8_t out[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(!t || !out, VT_ERR_ARG, "vt_merkle_root: NULL argument");
    if (t->lv[0].n == 0) return vt_sha256("", 0, out);
    return range_hash(t, 0, t->lv[0].n, out);
}

vt_err vt_merkle_root_of(const uint8_t (*leaves)[VT_HASH_LEN], uint64_t n, uint8_t out[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(!out || (n && !leaves), VT_ERR_ARG, "vt_merkle_root_of: NULL argument");
    if (n == 0) return vt_sha256("", 0, out);
    /* Stack of complete subtrees (left to right, strictly decreasing sizes):
     * the binary decomposition of the number of leaves seen so far. */
    uint8_t st[VT_MERKLE_MAX_LEVELS][VT_HASH_LEN];
    int lvl[VT_MERKLE_MAX_LEVELS];
    int top = 0;
    for (uint64_t i = 0; i < n; i++) {
        VT_ASSERT(top < VT_MERKLE_MAX_LEVELS); /* strictly decreasing sizes: at most 64 subtrees */
        memcpy(st[top], leaves[i], VT_HASH_LEN);
        lvl[top++] = 0;
        while (top >= 2 && lvl[top - 1] == lvl[top - 2]) {
            VT_FORWARD_IF_ERROR(vt_merkle_node_hash(st[top - 2], st[top - 1], st[top - 2]));
            lvl[top - 2]++;
            top--;
        }
    }
    /* RFC split: fold from the right (smallest subtree) to the left. */
    while (top >= 2) {
        VT_FORWARD_IF_ERROR(vt_merkle_node_hash(st[top - 2], st[top - 1], st[top - 2]));
        top--;
    }
    memcpy(out, st[0], VT_HASH_LEN);
    return VT_OK;
}

int vt_merkle_path_len(uint64_t index, uint64_t size)
{
    if (index >= size) return -1;
    int len = 0;
    while (size > 1) {
        uint64_t k = split_point(size);
        if (index < k) {
            size = k;
        } else {
            index -= k;
            size -= k;
        }
        len++;
    }
    return len;
}

vt_err vt_merkle_prove(const vt_merkle *t, uint64_t index, uint8_t (*path)[VT_HASH_LEN], size_t cap,
                       size_t *len)
{
    VT_RETURN_ERROR_IF(!t || !len || (cap && !path), VT_ERR_ARG, "vt_merkle_prove: NULL argument");
    *len = 0;
    uint64_t size = t->lv[0].n;
    VT_RETURN_ERROR_IF(index >= size, VT_ERR_ARG, "leaf %llu out of range (size %llu)",
                       (unsigned long long)index, (unsigned long long)size);
    int need = vt_merkle_path_len(index, size);
    VT_RETURN_ERROR_IF((size_t)need > cap, VT_ERR_LIMIT, "proof needs %d hashes, buffer holds %zu",
                       need, cap);
    /* RFC 9162 2.1.3.1: PATH(m, D[a:b]) = PATH(m, D[a:a+k]) : MTH(D[a+k:b]) when m < k,
     * else PATH(m-k, D[a+k:b]) : MTH(D[a:a+k]). Walk top-down and fill the
     * path from its end (the top sibling is the last element). */
    uint64_t a = 0, b = size, m = index;
    int pos = need;
    while (b - a > 1) {
        uint64_t k = split_point(b - a);
        pos--;
        VT_ASSERT(pos >= 0 && m < b - a); /* vt_merkle_path_len counted this walk */
        if (m < k) {
            VT_FORWARD_IF_ERROR(range_hash(t, a + k, b, path[pos]));
            b = a + k;
        } else {
            VT_FORWARD_IF_ERROR(range_hash(t, a, a + k, path[pos]));
            a += k;
            m -= k;
        }
    }
    if (pos != 0) VT_RETURN_ERROR(VT_ERR_INTERNAL, "merkle: audit path length mismatch");
    *len = (size_t)need;
    return VT_OK;
}

int vt_merkle_verify(const uint8_t leaf_hash[VT_HASH_LEN], uint64_t index, uint64_t tree_size,
                     const uint8_t (*path)[VT_HASH_LEN], size_t path_len,
                     const uint8_t root[VT_HASH_LEN])
{
    if (!leaf_hash || !root || (path_len && !path)) return -1;
    /* 1. */
    if (index >= tree_size) return -1;
    if (path_len > VT_MERKLE_MAX_PATH) return -1; /* cannot be valid; bounds the work */
    /* 2.-3. */
    uint64_t fn = index, sn = tree_size - 1;
    uint8_t r[VT_HASH_LEN];
    memcpy(r, leaf_hash, VT_HASH_LEN);
    /* 4. */
    for (size_t i = 0; i < path_len; i++) {
        if (sn == 0) return -1; /* a. */
        if ((fn & 1) || fn == sn) { /* b. */
            if (vt_merkle_node_hash(path[i], r, r) != VT_OK) return -1;
            if (!(fn & 1)) {
                while (!(fn & 1) && fn != 0) {
                    fn >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            if (vt_merkle_node_hash(r, path[i], r) != VT_OK) return -1;
        }
        fn >>= 1; /* c. */
        sn >>= 1;
    }
    /* 5. */
    if (sn != 0) return -1;
    uint8_t diff = 0;
    for (int i = 0; i < VT_HASH_LEN; i++) diff |= (uint8_t)(r[i] ^ root[i]);
    return diff ? -1 : 0;
}
