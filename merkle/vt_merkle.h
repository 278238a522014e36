/* vt_merkle.h - RFC 9162 (Certificate Transparency v2) Merkle tree over SHA-256.
 *
 *   leaf hash  = SHA-256(0x00 || leaf_bytes)
 *   node hash  = SHA-256(0x01 || left || right)
 *   MTH({})    = SHA-256("")                      (empty tree)
 *   MTH({d0})  = leaf hash of d0
 *   MTH(D[n])  = node(MTH(D[0:k]), MTH(D[k:n]))  with k the largest power of two < n
 *
 * The tree object works on leaf hashes (callers hash their leaves with
 * vt_merkle_leaf_hash or vt_step_leaf first).  It keeps every leaf hash and every
 * complete, aligned subtree hash (about 64 bytes per leaf in all), so that
 * appending costs O(1) amortised, the root O(log n) and an inclusion proof
 * O(log^2 n) hashes at most.
 *
 * Inclusion proofs are RFC 9162 section 2.1.3.1 audit paths: the list of sibling
 * hashes from the leaf's level up to the root (bottom-up), each VT_HASH_LEN bytes.
 * vt_merkle_verify implements the verification algorithm of section 2.1.3.2.
 *
 * The project's leaf for training step s (docs/commitments.md):
 *
 *   leaf_s = SHA-256(0x00 || u64le(s) || state_hash_s || log_hash_s)    (1+8+32+32 bytes hashed)
 *
 * When the recipe commits the state hash only every H steps, steps without a
 * committed state use 32 bytes of 0xFF in place of state_hash_s (VT_STEP_NO_STATE).
 */
#ifndef VT_MERKLE_H
#define VT_MERKLE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../common/vt_hash.h"

/* A path has at most one hash per level; a tree of at most 2^64-1 leaves has
 * depth at most 64. */
#define VT_MERKLE_MAX_PATH 64
#define VT_MERKLE_MAX_LEVELS 65

/* Number of bytes hashed for a step leaf, the 0x00 prefix included. */
#define VT_STEP_LEAF_BYTES (1 + 8 + VT_HASH_LEN + VT_HASH_LEN)
/* Byte that fills the state-hash field of a step whose state is not committed. */
#define VT_STEP_NO_STATE_BYTE 0xFF

/* Leaf hash: SHA-256(0x00 || p[0..n)). */
vt_err vt_merkle_leaf_hash(const void *p, size_t n, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

/* Interior node hash: SHA-256(0x01 || left || right). */
vt_err vt_merkle_node_hash(const uint8_t left[VT_HASH_LEN], const uint8_t right[VT_HASH_LEN],
                           uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

/* Leaf of step s: SHA-256(0x00 || u64le(s) || state || log_hash), where state is
 * state_hash when has_state != 0 and 32 bytes of 0xFF when has_state == 0
 * (state_hash may then be NULL and is not read). */
vt_err vt_step_leaf(uint64_t s, const uint8_t state_hash[VT_HASH_LEN], int has_state,
                    const uint8_t log_hash[VT_HASH_LEN], uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

/* One level of the tree: hashes of the complete subtrees of 2^level leaves
 * aligned at multiples of 2^level (level 0 = the leaf hashes). Private. */
typedef struct {
    uint8_t (*h)[VT_HASH_LEN];
    uint64_t n;
    uint64_t cap;
} vt_merkle_level_;

/* Incremental tree. Fields are private; use the functions below. A zeroed
 * struct (or one passed to vt_merkle_init) is an empty tree. Not thread-safe
 * for concurrent append; concurrent const calls are fine. */
typedef struct {
    vt_merkle_level_ lv[VT_MERKLE_MAX_LEVELS];
} vt_merkle;

void vt_merkle_init(vt_merkle *t);
/* Releases the memory; the tree is empty (and reusable) afterwards. */
void vt_merkle_free(vt_merkle *t);
/* Appends one leaf hash. On failure the tree is unchanged. */
vt_err vt_merkle_append(vt_merkle *t, const uint8_t leaf_hash[VT_HASH_LEN]) VT_WARN_UNUSED;
/* Number of leaves. */
uint64_t vt_merkle_size(const vt_merkle *t);
/* Copies leaf hash i (VT_ERR_ARG when i >= size). */
vt_err vt_merkle_leaf(const vt_merkle *t, uint64_t i, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;
/* Root of the current tree (SHA-256("") when empty). */
vt_err vt_merkle_root(const vt_merkle *t, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

/* Root of n leaf hashes without building a tree (O(n) time, O(log n) memory). */
vt_err vt_merkle_root_of(const uint8_t (*leaves)[VT_HASH_LEN], uint64_t n,
                         uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

/* Length of the audit path of leaf `index` in a tree of `size` leaves, or -1
 * when index >= size. */
int vt_merkle_path_len(uint64_t index, uint64_t size);

/* Audit path of leaf `index` (bottom-up sibling hashes) into path[0..cap);
 * *len receives the number of hashes (vt_merkle_path_len(index, size)).
 * VT_ERR_ARG when index >= size, VT_ERR_LIMIT when cap is too small
 * (VT_MERKLE_MAX_PATH always suffices). */
vt_err vt_merkle_prove(const vt_merkle *t, uint64_t index, uint8_t (*path)[VT_HASH_LEN], size_t cap,
                       size_t *len) VT_WARN_UNUSED;

/* RFC 9162 section 2.1.3.2: returns 0 when `path` proves that `leaf_hash` is leaf
 * `index` of a tree of `tree_size` leaves with root `root`, else -1 (index >=
 * tree_size, a path of the wrong length, a mismatch, or a hashing failure).
 * As in RFC 9162 the root does not encode the size: a path also verifies under
 * another size whose audit path for `index` has the same shape (e.g. leaf 0 of
 * 3 and of 4 leaves), so tree_size must come from the signed commitment, never
 * from the party presenting the proof. */
int vt_merkle_verify(const uint8_t leaf_hash[VT_HASH_LEN], uint64_t index, uint64_t tree_size,
                     const uint8_t (*path)[VT_HASH_LEN], size_t path_len,
                     const uint8_t root[VT_HASH_LEN]) VT_WARN_UNUSED;

#endif
