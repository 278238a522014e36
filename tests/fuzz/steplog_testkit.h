/* steplog_testkit.h - helpers shared by tests/unit/test_codec.c and tests/fuzz/make_corpus.c
 * to build step-log payloads and containers byte by byte (valid or hostile).
 * Header-only (static functions); needs libzstd and the project's common library. */
#ifndef VT_STEPLOG_TESTKIT_H
#define VT_STEPLOG_TESTKIT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/vt_bytes.h"
#include "common/vt_hash.h"
#include "rounding_log/vt_rlog.h"

#define TK_PAYLOAD_HEADER_LEN 20
#define TK_CONTAINER_HEADER_LEN 56

/* Abort on a helper failure: these only run on data we construct ourselves. */
#define TK_MUST(expr)                  \
    do {                               \
        if ((expr) != VT_OK) abort(); \
    } while (0)

/* Payload header: magic, version, reserved, step, n_ops. */
static inline void tk_payload_header(vt_buf *b, const char magic[4], uint16_t version, uint16_t reserved,
                                     uint64_t step, uint32_t n_ops)
{
    TK_MUST(vt_buf_append(b, magic, 4));
    TK_MUST(vt_buf_u16le(b, version));
    TK_MUST(vt_buf_u16le(b, reserved));
    TK_MUST(vt_buf_u64le(b, step));
    TK_MUST(vt_buf_u32le(b, n_ops));
}

/* Op record prefix: op_id, n_elems, n_entries, body_len (the body follows). */
static inline void tk_record(vt_buf *b, uint32_t op_id, uint64_t n_elems, uint64_t n_entries, uint64_t body_len)
{
    TK_MUST(vt_buf_u32le(b, op_id));
    TK_MUST(vt_buf_varint(b, n_elems));
    TK_MUST(vt_buf_varint(b, n_entries));
    TK_MUST(vt_buf_varint(b, body_len));
}

static inline void tk_bytes(vt_buf *b, const void *p, size_t n) { TK_MUST(vt_buf_append(b, p, n)); }

/* Container with every header field given explicitly, followed by frame bytes. */
static inline void tk_container_raw(vt_buf *b, const char magic[4], uint16_t version, uint16_t flags, uint64_t step,
                                    uint64_t payload_len, const uint8_t hash[32], const void *frame, size_t frame_len)
{
    TK_MUST(vt_buf_append(b, magic, 4));
    TK_MUST(vt_buf_u16le(b, version));
    TK_MUST(vt_buf_u16le(b, flags));
    TK_MUST(vt_buf_u64le(b, step));
    TK_MUST(vt_buf_u64le(b, payload_len));
    TK_MUST(vt_buf_append(b, hash, 32));
    TK_MUST(vt_buf_append(b, frame, frame_len));
}

/* Compress bytes into one zstd frame (content size declared). */
static inline void tk_zstd(vt_buf *b, const void *p, size_t n, int level)
{
    size_t bound = ZSTD_compressBound(n);
    TK_MUST(vt_buf_reserve(b, bound));
    size_t c = ZSTD_compress(b->data + b->len, bound, p, n, level);
    if (ZSTD_isError(c)) abort();
    b->len += c;
}

/* A well-formed container around arbitrary payload bytes (which need not be a valid
 * payload): correct payload_len, hash and frame; the step is the given one. */
static inline void tk_wrap(vt_buf *b, const uint8_t *payload, size_t n, uint64_t step)
{
    uint8_t h[32];
    vt_buf z;
    vt_buf_init(&z);
    TK_MUST(vt_sha256(payload, n, h));
    tk_zstd(&z, payload, n, 1);
    tk_container_raw(b, "VTLZ", 1, 0, step, n, h, z.data, z.len);
    vt_buf_free(&z);
}

/* Hand-made zstd frame of RLE blocks: declares content size `declared`
 * (ZSTD_CONTENTSIZE_UNKNOWN: no content size field) and actually expands to
 * n_blocks * 128 KiB zero bytes. Each block costs 4 bytes. */
static inline void tk_rle_frame(vt_buf *b, unsigned long long declared, uint32_t n_blocks)
{
    TK_MUST(vt_buf_u32le(b, ZSTD_MAGICNUMBER));
    if (declared == ZSTD_CONTENTSIZE_UNKNOWN) {
        TK_MUST(vt_buf_u8(b, 0x00)); /* FCS flag 0, not single segment: no content size */
        TK_MUST(vt_buf_u8(b, 0x38)); /* window descriptor: 2^17 = 128 KiB */
    } else {
        TK_MUST(vt_buf_u8(b, 0xC0)); /* FCS flag 3 (8 bytes), not single segment */
        TK_MUST(vt_buf_u8(b, 0x38));
        TK_MUST(vt_buf_u64le(b, (uint64_t)declared));
    }
    for (uint32_t i = 0; i < n_blocks; i++) {
        uint32_t hdr = (131072u << 3) | (1u << 1) | (i + 1 == n_blocks ? 1u : 0u); /* RLE block of 128 KiB */
        uint8_t blk[4] = {(uint8_t)hdr, (uint8_t)(hdr >> 8), (uint8_t)(hdr >> 16), 0x00 /* the repeated byte */};
        TK_MUST(vt_buf_append(b, blk, 4));
    }
}

/* The small log used as a known-answer vector in docs/format.md:
 * step 7, one op (id 3, 10 elements): index 0 up, index 2 value 1.0f, index 9 down. */
static const uint8_t tk_golden_payload[] = {
    'V', 'T', 'L', 'P', 0x01, 0x00, 0x00, 0x00,             /* magic, version 1, reserved */
    0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,         /* step 7 */
    0x01, 0x00, 0x00, 0x00,                                 /* n_ops 1 */
    0x03, 0x00, 0x00, 0x00, 0x0a, 0x03, 0x09,               /* op_id 3, n_elems 10, n_entries 3, body_len 9 */
    0x00, 0x01, 0x06,                                       /* indices 0, 2, 9 as deltas 0, 1, 6 */
    0x02,                                                   /* kind bitset: entry 1 is a value */
    0x01,                                                   /* direction bitset: dir entry 0 up, 1 down */
    0x00, 0x00, 0x80, 0x3f,                                 /* value of entry 1: 1.0f */
};

static inline void tk_golden_log(vt_steplog *l)
{
    vt_oplog *o;
    vt_steplog_init(l, 7);
    TK_MUST(vt_steplog_add_op(l, 3, 10, &o));
    TK_MUST(vt_oplog_push(o, (vt_log_entry){.index = 0, .value_bits = 0, .is_value = 0, .up = 1}));
    TK_MUST(vt_oplog_push(o, (vt_log_entry){.index = 2, .value_bits = 0x3f800000u, .is_value = 1, .up = 0}));
    TK_MUST(vt_oplog_push(o, (vt_log_entry){.index = 9, .value_bits = 0, .is_value = 0, .up = 0}));
}

/* ------------------------------------------------------------------ valid logs */

/* A deterministic log exercising every feature: several ops with gaps in their
 * ids, an op with no entries, mixed entry kinds, indices 0 and n_elems-1,
 * indices near 2^40 and a one-element op. */
static inline void tk_mixed_log(vt_steplog *l)
{
    vt_oplog *o;
    vt_steplog_init(l, 123456789012ull);
    TK_MUST(vt_steplog_add_op(l, 0, 1, &o)); /* one element, one value entry */
    TK_MUST(vt_oplog_push(o, (vt_log_entry){.index = 0, .value_bits = 0x80000000u, .is_value = 1, .up = 0}));
    TK_MUST(vt_steplog_add_op(l, 2, 4096, &o)); /* no entries */
    TK_MUST(vt_steplog_add_op(l, 3, 4096, &o)); /* 0 .. n-1, mixed */
    for (uint64_t i = 0; i < 4096; i += 97) {
        int val = (i / 97) % 3 == 0;
        TK_MUST(vt_oplog_push(o, (vt_log_entry){.index = i, .value_bits = val ? (uint32_t)(0x3f800000u + i) : 0,
                                                .is_value = (uint8_t)val, .up = (uint8_t)(!val && (i & 1))}));
    }
    TK_MUST(vt_oplog_push(o, (vt_log_entry){.index = 4095, .value_bits = 0, .is_value = 0, .up = 1}));
    TK_MUST(vt_steplog_add_op(l, 1000, (uint64_t)1 << 40, &o)); /* indices near 2^40 */
    const uint64_t big[] = {0, 1, ((uint64_t)1 << 39) + 5, ((uint64_t)1 << 40) - 3, ((uint64_t)1 << 40) - 1};
    for (unsigned i = 0; i < sizeof big / sizeof big[0]; i++)
        TK_MUST(vt_oplog_push(o, (vt_log_entry){.index = big[i], .value_bits = i == 2 ? 0x7f7fffffu : 0,
                                                .is_value = i == 2, .up = (uint8_t)(i != 2 && i % 2)}));
    TK_MUST(vt_steplog_add_op(l, 0xffffffffu, 9, &o)); /* largest op id, 9 entries: bitsets of 2 bytes */
    for (uint64_t i = 0; i < 9; i++)
        TK_MUST(vt_oplog_push(o, (vt_log_entry){.index = i, .value_bits = 0, .is_value = 0, .up = (uint8_t)(i == 8)}));
}

/* ------------------------------------------------------------------ hostile cases */

typedef struct {
    const char *name;     /* corpus file name: "bad-..." */
    vt_err expect;        /* code under the default limits */
    void (*build)(vt_buf *b);
    int in_corpus;        /* 1: written to tests/corpus/steplog by make_corpus */
} tk_case;

#define TK_U64MAX UINT64_MAX
static inline void tk_one_op(vt_buf *b, uint64_t n_elems, uint64_t n_entries, uint64_t body_len, const void *body,
                             size_t body_n)
{
    tk_payload_header(b, "VTLP", 1, 0, 5, 1);
    tk_record(b, 1, n_elems, n_entries, body_len);
    tk_bytes(b, body, body_n);
}
static void tkp_magic(vt_buf *b) { tk_payload_header(b, "VTLX", 1, 0, 5, 0); }
static void tkp_version(vt_buf *b) { tk_payload_header(b, "VTLP", 2, 0, 5, 0); }
static void tkp_reserved(vt_buf *b) { tk_payload_header(b, "VTLP", 1, 1, 5, 0); }
static void tkp_truncated(vt_buf *b) { tk_bytes(b, tk_golden_payload, sizeof tk_golden_payload - 1); }
static void tkp_trailing(vt_buf *b)
{
    tk_bytes(b, tk_golden_payload, sizeof tk_golden_payload);
    TK_MUST(vt_buf_u8(b, 0));
}
/* Indices going backwards / repeating can only be written as a delta that wraps around 2^64. */
static void tkp_out_of_order(vt_buf *b)
{
    vt_buf body;
    vt_buf_init(&body);
    TK_MUST(vt_buf_varint(&body, 50));
    TK_MUST(vt_buf_varint(&body, TK_U64MAX - 40)); /* 50 + 1 + d == 10 mod 2^64 */
    TK_MUST(vt_buf_u8(&body, 0x00));               /* kind: two directions */
    TK_MUST(vt_buf_u8(&body, 0x00));               /* directions */
    tk_one_op(b, 100, 2, body.len, body.data, body.len);
    vt_buf_free(&body);
}
static void tkp_duplicate(vt_buf *b)
{
    vt_buf body;
    vt_buf_init(&body);
    TK_MUST(vt_buf_varint(&body, 50));
    TK_MUST(vt_buf_varint(&body, TK_U64MAX)); /* 50 + 1 + d == 50 mod 2^64 */
    TK_MUST(vt_buf_u8(&body, 0x00));
    TK_MUST(vt_buf_u8(&body, 0x00));
    tk_one_op(b, 100, 2, body.len, body.data, body.len);
    vt_buf_free(&body);
}
static void tkp_index_ge_nelems(vt_buf *b)
{
    const uint8_t body[] = {0x0a, 0x00, 0x00}; /* index 10 of 10 elements */
    tk_one_op(b, 10, 1, sizeof body, body, sizeof body);
}
static void tkp_opid_equal(vt_buf *b)
{
    tk_payload_header(b, "VTLP", 1, 0, 5, 2);
    tk_record(b, 5, 10, 0, 0);
    tk_record(b, 5, 10, 0, 0);
}
static void tkp_opid_decreasing(vt_buf *b)
{
    tk_payload_header(b, "VTLP", 1, 0, 5, 2);
    tk_record(b, 5, 10, 0, 0);
    tk_record(b, 4, 10, 0, 0);
}
static void tkp_nentries_huge(vt_buf *b)
{
    const uint8_t body[] = {0x00, 0x00, 0x00};
    tk_one_op(b, (uint64_t)1 << 40, (uint64_t)1 << 39, sizeof body, body, sizeof body);
}
static void tkp_nentries_gt_nelems(vt_buf *b)
{
    const uint8_t body[] = {0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    tk_one_op(b, 3, 4, sizeof body, body, sizeof body);
}
static void tkp_nops_huge(vt_buf *b) { tk_payload_header(b, "VTLP", 1, 0, 5, 0xffffffffu); }
static void tkp_nops_vs_bytes(vt_buf *b)
{
    tk_payload_header(b, "VTLP", 1, 0, 5, 60000);
    tk_record(b, 1, 10, 0, 0);
}
static void tkp_nelems_limit(vt_buf *b) { tk_one_op(b, ((uint64_t)1 << 40) + 1, 0, 0, NULL, 0); }
static void tkp_varint_overflow(vt_buf *b)
{
    const uint8_t v[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}; /* 2^64 + ... */
    tk_payload_header(b, "VTLP", 1, 0, 5, 1);
    TK_MUST(vt_buf_u32le(b, 1));
    tk_bytes(b, v, sizeof v); /* n_elems */
    tk_bytes(b, "\x00\x00", 2);
}
static void tkp_varint_too_long(vt_buf *b)
{
    const uint8_t v[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    tk_payload_header(b, "VTLP", 1, 0, 5, 1);
    TK_MUST(vt_buf_u32le(b, 1));
    tk_bytes(b, v, sizeof v);
    tk_bytes(b, "\x00\x00", 2);
}
static void tkp_varint_nonminimal(vt_buf *b)
{
    tk_payload_header(b, "VTLP", 1, 0, 5, 1);
    TK_MUST(vt_buf_u32le(b, 1));
    tk_bytes(b, "\x0a\x80\x00\x00", 4); /* n_elems 10, n_entries 0 written as 0x80 0x00, body_len 0 */
}
static void tkp_kind_padding(vt_buf *b)
{
    const uint8_t body[] = {0x03, 0x02, 0x00}; /* one direction entry; kind bit 1 set (unused) */
    tk_one_op(b, 10, 1, sizeof body, body, sizeof body);
}
static void tkp_dir_padding(vt_buf *b)
{
    const uint8_t body[] = {0x03, 0x00, 0x81}; /* one direction entry, up; bit 7 set (unused) */
    tk_one_op(b, 10, 1, sizeof body, body, sizeof body);
}
static void tkp_bodylen_long(vt_buf *b)
{
    const uint8_t body[] = {0x03, 0x00, 0x01, 0x00}; /* one extra byte inside body_len */
    tk_one_op(b, 10, 1, sizeof body, body, sizeof body);
}
static void tkp_bodylen_short(vt_buf *b)
{
    const uint8_t body[] = {0x03, 0x01, 0x00, 0x00, 0x80}; /* value entry needs 4 bytes, body_len leaves 2 */
    tk_one_op(b, 10, 1, 4, body, sizeof body);
}
static void tkp_bodylen_past_end(vt_buf *b)
{
    const uint8_t body[] = {0x03, 0x00, 0x01};
    tk_one_op(b, 10, 1, 1000, body, sizeof body);
}

static const tk_case tk_payload_cases[] = {
    {"bad-payload-magic", VT_ERR_FORMAT, tkp_magic, 1},
    {"bad-payload-version", VT_ERR_FORMAT, tkp_version, 1},
    {"bad-payload-reserved", VT_ERR_FORMAT, tkp_reserved, 0},
    {"bad-payload-truncated", VT_ERR_FORMAT, tkp_truncated, 1},
    {"bad-payload-trailing", VT_ERR_FORMAT, tkp_trailing, 1},
    {"bad-payload-out-of-order", VT_ERR_FORMAT, tkp_out_of_order, 1},
    {"bad-payload-duplicate-index", VT_ERR_FORMAT, tkp_duplicate, 1},
    {"bad-payload-index-ge-nelems", VT_ERR_FORMAT, tkp_index_ge_nelems, 1},
    {"bad-payload-opid-equal", VT_ERR_FORMAT, tkp_opid_equal, 1},
    {"bad-payload-opid-decreasing", VT_ERR_FORMAT, tkp_opid_decreasing, 0},
    {"bad-payload-nentries-huge", VT_ERR_FORMAT, tkp_nentries_huge, 1},
    {"bad-payload-nentries-gt-nelems", VT_ERR_FORMAT, tkp_nentries_gt_nelems, 0},
    {"bad-payload-nops-limit", VT_ERR_LIMIT, tkp_nops_huge, 0},
    {"bad-payload-nops-vs-bytes", VT_ERR_FORMAT, tkp_nops_vs_bytes, 0},
    {"bad-payload-nelems-limit", VT_ERR_LIMIT, tkp_nelems_limit, 0},
    {"bad-payload-varint-overflow", VT_ERR_FORMAT, tkp_varint_overflow, 1},
    {"bad-payload-varint-too-long", VT_ERR_FORMAT, tkp_varint_too_long, 0},
    {"bad-payload-varint-nonminimal", VT_ERR_FORMAT, tkp_varint_nonminimal, 1},
    {"bad-payload-kind-padding", VT_ERR_FORMAT, tkp_kind_padding, 1},
    {"bad-payload-dir-padding", VT_ERR_FORMAT, tkp_dir_padding, 1},
    {"bad-payload-bodylen-long", VT_ERR_FORMAT, tkp_bodylen_long, 1},
    {"bad-payload-bodylen-short", VT_ERR_FORMAT, tkp_bodylen_short, 1},
    {"bad-payload-bodylen-past-end", VT_ERR_FORMAT, tkp_bodylen_past_end, 0},
};
#define TK_N_PAYLOAD_CASES (sizeof tk_payload_cases / sizeof tk_payload_cases[0])

/* Containers. */
static inline void tk_golden_container(vt_buf *b) { tk_wrap(b, tk_golden_payload, sizeof tk_golden_payload, 7); }
static void tkc_magic(vt_buf *b)
{
    tk_golden_container(b);
    b->data[3] = 'X';
}
static void tkc_version(vt_buf *b)
{
    tk_golden_container(b);
    b->data[4] = 2;
}
static void tkc_flags(vt_buf *b)
{
    tk_golden_container(b);
    b->data[7] = 0x80;
}
static void tkc_hash(vt_buf *b)
{
    tk_golden_container(b);
    b->data[24 + 31] ^= 1;
}
static void tkc_step(vt_buf *b)
{
    tk_golden_container(b);
    b->data[8] = 8; /* payload says step 7 */
}
static void tkc_trailing(vt_buf *b)
{
    tk_golden_container(b);
    TK_MUST(vt_buf_u8(b, 0));
}
static void tkc_two_frames(vt_buf *b)
{
    tk_golden_container(b);
    tk_zstd(b, "x", 1, 1);
}
static void tkc_truncated_frame(vt_buf *b)
{
    tk_golden_container(b);
    b->len--;
}
static void tkc_no_frame(vt_buf *b)
{
    tk_golden_container(b);
    b->len = TK_CONTAINER_HEADER_LEN;
}
static void tkc_payload_len_small(vt_buf *b)
{
    uint8_t h[32];
    vt_buf z;
    vt_buf_init(&z);
    TK_MUST(vt_sha256(tk_golden_payload, 10, h));
    tk_zstd(&z, tk_golden_payload, 10, 1);
    tk_container_raw(b, "VTLZ", 1, 0, 7, 10, h, z.data, z.len);
    vt_buf_free(&z);
}
static void tkc_len_mismatch(vt_buf *b)
{
    tk_golden_container(b);
    vt_put_u64le(b->data + 16, sizeof tk_golden_payload + 1); /* frame declares the true size */
}
static void tkc_payload_len_limit(vt_buf *b)
{
    /* A zstd frame that really expands to 300 MB (2400 RLE blocks would be 9.6 KB; the
     * corpus keeps 64 of them: the limit check comes before the frame is looked at). */
    vt_buf z;
    uint8_t h[32] = {0};
    vt_buf_init(&z);
    tk_rle_frame(&z, 300000000ull, 64);
    tk_container_raw(b, "VTLZ", 1, 0, 7, 300000000ull, h, z.data, z.len);
    vt_buf_free(&z);
}
static void tkc_bomb(vt_buf *b)
{
    /* The frame declares 100 bytes but its 512 RLE blocks expand to 64 MiB. */
    vt_buf z;
    uint8_t h[32] = {0};
    vt_buf_init(&z);
    tk_rle_frame(&z, 100, 512);
    tk_container_raw(b, "VTLZ", 1, 0, 7, 100, h, z.data, z.len);
    vt_buf_free(&z);
}
static void tkc_declares_more(vt_buf *b)
{
    /* payload_len 100 but the frame declares 1 GiB (and holds 2 MiB of zeros). */
    vt_buf z;
    uint8_t h[32] = {0};
    vt_buf_init(&z);
    tk_rle_frame(&z, 1ull << 30, 16);
    tk_container_raw(b, "VTLZ", 1, 0, 7, 100, h, z.data, z.len);
    vt_buf_free(&z);
}
static void tkc_unknown_size(vt_buf *b)
{
    vt_buf z;
    uint8_t h[32] = {0};
    vt_buf_init(&z);
    tk_rle_frame(&z, ZSTD_CONTENTSIZE_UNKNOWN, 1);
    tk_container_raw(b, "VTLZ", 1, 0, 7, 131072, h, z.data, z.len);
    vt_buf_free(&z);
}
static void tkc_skippable(vt_buf *b)
{
    uint8_t h[32] = {0};
    uint8_t f[8 + 20] = {0};
    vt_put_u32le(f, ZSTD_MAGIC_SKIPPABLE_START);
    vt_put_u32le(f + 4, 20);
    tk_container_raw(b, "VTLZ", 1, 0, 7, 20, h, f, sizeof f);
}
static void tkc_bad_payload(vt_buf *b)
{
    /* Correct hash and frame around a payload with an index >= n_elems. */
    vt_buf p;
    vt_buf_init(&p);
    tkp_index_ge_nelems(&p);
    tk_wrap(b, p.data, p.len, 5);
    vt_buf_free(&p);
}

static const tk_case tk_container_cases[] = {
    {"bad-container-magic", VT_ERR_FORMAT, tkc_magic, 1},
    {"bad-container-version", VT_ERR_FORMAT, tkc_version, 0},
    {"bad-container-flags", VT_ERR_FORMAT, tkc_flags, 0},
    {"bad-container-hash", VT_ERR_MISMATCH, tkc_hash, 1},
    {"bad-container-step", VT_ERR_FORMAT, tkc_step, 1},
    {"bad-container-trailing", VT_ERR_FORMAT, tkc_trailing, 1},
    {"bad-container-two-frames", VT_ERR_FORMAT, tkc_two_frames, 0},
    {"bad-container-truncated-frame", VT_ERR_FORMAT, tkc_truncated_frame, 0},
    {"bad-container-no-frame", VT_ERR_FORMAT, tkc_no_frame, 0},
    {"bad-container-payload-len-small", VT_ERR_FORMAT, tkc_payload_len_small, 0},
    {"bad-container-len-mismatch", VT_ERR_FORMAT, tkc_len_mismatch, 0},
    {"bad-container-payload-len-limit", VT_ERR_LIMIT, tkc_payload_len_limit, 1},
    {"bad-container-bomb", VT_ERR_FORMAT, tkc_bomb, 1},
    {"bad-container-declares-more", VT_ERR_FORMAT, tkc_declares_more, 0},
    {"bad-container-unknown-size", VT_ERR_FORMAT, tkc_unknown_size, 1},
    {"bad-container-skippable", VT_ERR_FORMAT, tkc_skippable, 0},
    {"bad-container-bad-payload", VT_ERR_FORMAT, tkc_bad_payload, 1},
};
#define TK_N_CONTAINER_CASES (sizeof tk_container_cases / sizeof tk_container_cases[0])

#endif
