/* vt_rlog.h - the step log alone (docs/format.md "step log payload"): its entries, the per-operation
 * and per-step records, and their codec (vt_codec.c). Nothing here rounds: the rules that write and
 * judge an entry are rounding/vt_round.h's (log rounding, rounding/vt_round_log.c), which sit above
 * this layer; the default exact rounding never writes an entry. */
#ifndef VT_RLOG_H
#define VT_RLOG_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

/* ---------------------------------------------------------------- step log */

/* One log entry: the element index within the operation's output, and either a
 * direction (the FP32 neighbour above or below the unique midpoint near x) or the
 * trainer's FP32 value (cancellation: B is not small against the ulp). */
typedef struct {
    uint64_t index;
    uint32_t value_bits; /* value entries: raw FP32 bits */
    uint8_t is_value;    /* 1 = value entry, 0 = direction entry */
    uint8_t up;          /* direction entries: 1 = upper neighbour, 0 = lower */
} vt_log_entry;

/* Entries of one operation, indices strictly increasing. */
typedef struct {
    uint32_t op_id;
    uint64_t n_elems;
    uint64_t n_entries;
    uint64_t cap;
    vt_log_entry *e;
} vt_oplog;

/* The log of one training step: one vt_oplog per rounded operation, in the
 * step's fixed operation order (op ids strictly increasing). */
typedef struct {
    uint64_t step;
    uint32_t n_ops;
    uint32_t cap_ops;
    vt_oplog *ops;
} vt_steplog;

void vt_steplog_init(vt_steplog *l, uint64_t step);
void vt_steplog_free(vt_steplog *l);
/* Empties the log (keeps allocations) and sets its step. */
void vt_steplog_reset(vt_steplog *l, uint64_t step);
/* Appends a new, empty operation record; returns it through *out. */
vt_err vt_steplog_add_op(vt_steplog *l, uint32_t op_id, uint64_t n_elems, vt_oplog **out) VT_WARN_UNUSED;
vt_err vt_oplog_push(vt_oplog *o, vt_log_entry e) VT_WARN_UNUSED;
uint64_t vt_steplog_total_entries(const vt_steplog *l);

/* ------------------------------------------------------------------- codec */

/* Limits a decoder enforces (hostile input). Zero fields take the defaults. */
typedef struct {
    uint64_t max_decoded_bytes; /* default 256 MiB */
    uint32_t max_ops;           /* default 65536 */
    uint64_t max_entries;       /* default 16 Mi per step */
    uint64_t max_elems;         /* default 2^40 per op */
} vt_log_limits;

/* Canonical uncompressed encoding (docs/format.md, "step log payload").  The log
 * hash is SHA-256 of exactly these bytes, so it does not depend on zstd. */
vt_err vt_steplog_serialize(const vt_steplog *l, uint8_t **out, size_t *out_len) VT_WARN_UNUSED;
/* Compressed container (magic "VTLZ"): header + zstd frame of the payload.
 * hash (may be NULL) receives the log hash. */
vt_err vt_steplog_encode(const vt_steplog *l, int zstd_level, uint8_t **out, size_t *out_len,
                         uint8_t hash[32]) VT_WARN_UNUSED;
/* Decode a container; every byte is treated as hostile. hash (may be NULL)
 * receives the log hash of the decoded payload. On failure *l is left empty. */
vt_err vt_steplog_decode(const uint8_t *buf, size_t len, const vt_log_limits *lim, vt_steplog *l,
                         uint8_t hash[32]) VT_WARN_UNUSED;
/* Decode the uncompressed canonical payload (also used by decode). */
vt_err vt_steplog_parse(const uint8_t *buf, size_t len, const vt_log_limits *lim, vt_steplog *l) VT_WARN_UNUSED;
/* Stored form of a step's log (the run store, the LOG message): a log without any operation
 * record - every step of an exact-rounding run - is stored as zero bytes; any other log as its
 * container. hash receives the log hash either way (of the canonical payload, which still names
 * the step). *out is NULL when *out_len is 0. */
vt_err vt_steplog_encode_stored(const vt_steplog *l, int zstd_level, uint8_t **out, size_t *out_len,
                                uint8_t hash[32]) VT_WARN_UNUSED;
/* Decode a stored log of step `step`: zero bytes are the empty log of that step; anything else a
 * container (vt_steplog_decode; the caller checks that it holds that step's log: l->step). */
vt_err vt_steplog_decode_stored(const uint8_t *buf, size_t len, uint64_t step, const vt_log_limits *lim,
                                vt_steplog *l, uint8_t hash[32]) VT_WARN_UNUSED;
/* Hash of a log without keeping the encoding. */
vt_err vt_steplog_hash(const vt_steplog *l, uint8_t hash[32]) VT_WARN_UNUSED;

#endif
