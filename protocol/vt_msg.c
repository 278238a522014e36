/* vt_msg.c - message frames and body codecs of the dispute game (docs/protocol.md). */
#include "vt_proto.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vt_debug.h"

#define HL VT_MSG_HASH_LEN
/* VERDICT without its reason: commitment hash, step, op, loser, reason code, arbiter and auditor
 * keys, claimed step and state, the two nonces, the time */
#define VERDICT_FIXED (HL + 8 + 4 + 1 + 1 + 2 * VT_SIGN_PK_LEN + 8 + HL + 2 * VT_MSG_NONCE_LEN + 8)

/* Bounds of each type's body: {min, max}; min == max for fixed-size bodies. */
static const uint32_t body_min_[VT_MSG_TYPE_COUNT_] = {
    [VT_MSG_HELLO] = 1 + VT_SIGN_PK_LEN + 32,
    [VT_MSG_CHALLENGE] = VT_MSG_COMMITMENT_LEN + 2 * VT_SIGN_PK_LEN + 8 + HL + VT_MSG_NONCE_LEN + 2,
    [VT_MSG_Q_LEAF] = 8,
    [VT_MSG_LEAF] = 8 + 1 + 3 * HL + 8 + 2,
    [VT_MSG_Q_STATE] = 8,
    [VT_MSG_STATE_CLAIM] = 8 + HL,
    [VT_MSG_Q_CHAIN] = 24,
    [VT_MSG_CHAIN_CLAIM] = 24 + 2 * HL + 8,
    [VT_MSG_Q_INPUTS] = 12,
    [VT_MSG_INPUTS] = 8 + 4 + 2,
    [VT_MSG_Q_LOG] = 8,
    [VT_MSG_LOG] = 8 + 4,
    [VT_MSG_VERDICT] = VERDICT_FIXED + 2,
    [VT_MSG_ERROR] = 2 + 2,
    [VT_MSG_Q_MANIFEST] = 8,
    [VT_MSG_MANIFEST] = 8 + 4,
    [VT_MSG_Q_TENSORS] = 8,
    [VT_MSG_Q_PREFIX] = 24,
    [VT_MSG_HASHES] = 8 + 8 + 4,
    [VT_MSG_Q_HINT] = 12,
    [VT_MSG_HINT] = 8 + 4 + 1 + 8,
    [VT_MSG_Q_OUTPUT] = 12,
    [VT_MSG_Q_COMMITMENT] = 8,
    [VT_MSG_COMMITMENT] = 8 + 4,
    [VT_MSG_NOTE] = 1 + 1 + 2 + 4 + 4 * 8 + 2,
    [VT_MSG_Q_SERVICE] = HL + VT_MSG_NONCE_LEN,
    [VT_MSG_SERVICE] = HL + 2 * VT_MSG_NONCE_LEN + 2,
};
static const uint32_t body_max_[VT_MSG_TYPE_COUNT_] = {
    [VT_MSG_HELLO] = 1 + VT_SIGN_PK_LEN + 32,
    [VT_MSG_CHALLENGE] = VT_MSG_COMMITMENT_LEN + 2 * VT_SIGN_PK_LEN + 8 + HL + VT_MSG_NONCE_LEN + 2 + VT_MSG_SERVICE_MAX,
    [VT_MSG_Q_LEAF] = 8,
    [VT_MSG_LEAF] = 8 + 1 + 3 * HL + 8 + 2 + VT_MSG_PATH_MAX * HL,
    [VT_MSG_Q_STATE] = 8,
    [VT_MSG_STATE_CLAIM] = 8 + HL,
    [VT_MSG_Q_CHAIN] = 24,
    [VT_MSG_CHAIN_CLAIM] = 24 + 2 * HL + 8,
    [VT_MSG_Q_INPUTS] = 12,
    [VT_MSG_INPUTS] = VT_MSG_INPUTS_MAX_BODY,
    [VT_MSG_Q_LOG] = 8,
    [VT_MSG_LOG] = 8 + 4 + VT_MSG_LOG_MAX_DATA,
    [VT_MSG_VERDICT] = VERDICT_FIXED + 2 + VT_MSG_TEXT_MAX,
    [VT_MSG_ERROR] = 2 + 2 + VT_MSG_TEXT_MAX,
    [VT_MSG_Q_MANIFEST] = 8,
    [VT_MSG_MANIFEST] = 8 + 4 + VT_MSG_MANIFEST_MAX,
    [VT_MSG_Q_TENSORS] = 8,
    [VT_MSG_Q_PREFIX] = 24,
    [VT_MSG_HASHES] = 8 + 8 + 4 + VT_MSG_HASHES_MAX * HL,
    [VT_MSG_Q_HINT] = 12,
    [VT_MSG_HINT] = 8 + 4 + 1 + 8,
    [VT_MSG_Q_OUTPUT] = 12,
    [VT_MSG_Q_COMMITMENT] = 8,
    [VT_MSG_COMMITMENT] = 8 + 4 + VT_MSG_COMMITMENT_LEN,
    [VT_MSG_NOTE] = 1 + 1 + 2 + 4 + 4 * 8 + 2 + VT_MSG_TEXT_MAX,
    [VT_MSG_Q_SERVICE] = HL + VT_MSG_NONCE_LEN,
    [VT_MSG_SERVICE] = HL + 2 * VT_MSG_NONCE_LEN + 2 + VT_MSG_SERVICE_MAX,
};

static int type_ok(int type) { return type > 0 && type < VT_MSG_TYPE_COUNT_; }

const char *vt_msg_type_name(int type)
{
    static const char *const names[VT_MSG_TYPE_COUNT_] = {
        "ANY",     "HELLO",     "CHALLENGE", "Q_LEAF", "LEAF",  "Q_STATE", "STATE_CLAIM", "Q_CHAIN",
        "CHAIN_CLAIM", "Q_INPUTS", "INPUTS", "Q_LOG",  "LOG",   "VERDICT", "ERROR", "Q_MANIFEST", "MANIFEST",
        "Q_TENSORS", "Q_PREFIX", "HASHES", "Q_HINT", "HINT", "Q_OUTPUT", "Q_COMMITMENT", "COMMITMENT",
        "NOTE", "Q_SERVICE", "SERVICE",
    };
    if (type < 0 || type >= VT_MSG_TYPE_COUNT_) return "?";
    return names[type];
}

const char *vt_errc_name(int code)
{
    static const char *const n[] = {"?",    "malformed message", "unexpected message", "unauthorized",
                                    "busy", "over a limit",      "too slow",           "no such thing",
                                    "internal error", "invalid challenge"};
    return code > 0 && code < (int)(sizeof n / sizeof n[0]) ? n[code] : "?";
}

uint32_t vt_msg_max_body(int type, const vt_msg_limits *limits)
{
    if (!type_ok(type)) return 0;
    uint32_t m = body_max_[type];
    if (limits && limits->max_body[type] != 0 && limits->max_body[type] < m) m = limits->max_body[type];
    return m;
}

uint32_t vt_msg_min_body(int type) { return type_ok(type) ? body_min_[type] : 0; }

/* ------------------------------------------------------------------ strings */

vt_err vt_msg_check_text(const uint8_t *s, size_t n, size_t max, vt_err err, const char *what)
{
    VT_RETURN_ERROR_IF(n > max, err, "%s: %zu bytes, at most %zu allowed", what, n, max);
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        uint32_t cp;
        size_t k;
        if (c < 0x80) {
            cp = c;
            k = 1;
        } else if (c >= 0xC2 && c <= 0xDF) {
            cp = c & 0x1Fu;
            k = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            cp = c & 0x0Fu;
            k = 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            cp = c & 0x07u;
            k = 4;
        } else {
            VT_RETURN_ERROR(err, "%s: invalid UTF-8 lead byte 0x%02x at offset %zu", what, c, i);
        }
        VT_RETURN_ERROR_IF(n - i < k, err, "%s: truncated UTF-8 sequence at offset %zu", what, i);
        for (size_t j = 1; j < k; j++) {
            VT_RETURN_ERROR_IF((s[i + j] & 0xC0) != 0x80, err, "%s: invalid UTF-8 continuation at offset %zu",
                               what, i + j);
            cp = (cp << 6) | (s[i + j] & 0x3Fu);
        }
        VT_RETURN_ERROR_IF((k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000), err,
                           "%s: overlong UTF-8 sequence at offset %zu", what, i);
        VT_RETURN_ERROR_IF(cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF), err,
                           "%s: invalid code point U+%04X at offset %zu", what, (unsigned)cp, i);
        VT_RETURN_ERROR_IF(cp < 0x20 || (cp >= 0x7F && cp <= 0x9F), err,
                           "%s: control character U+%04X at offset %zu", what, (unsigned)cp, i);
        VT_RETURN_ERROR_IF((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 ||
                               cp == 0x2029,
                           err, "%s: formatting character U+%04X at offset %zu", what, (unsigned)cp, i);
        i += k;
    }
    return VT_OK;
}

static vt_err put_text(vt_buf *b, const char *s, size_t max, const char *what)
{
    size_t n = strnlen(s, max + 1);
    VT_FORWARD_IF_ERROR(vt_msg_check_text((const uint8_t *)s, n, max, VT_ERR_ARG, what));
    VT_FORWARD_IF_ERROR(vt_buf_u16le(b, (uint16_t)n));
    return vt_buf_append(b, s, n);
}

static vt_err get_text(vt_reader *r, char *dst, size_t max, const char *what)
{
    uint16_t n;
    const uint8_t *p;
    VT_FORWARD_IF_ERROR(vt_read_u16le(r, &n, what));
    VT_RETURN_ERROR_IF(n > max, VT_ERR_FORMAT, "%s: length %u, at most %zu allowed", what, (unsigned)n, max);
    VT_FORWARD_IF_ERROR(vt_read_skip(r, &p, n, what));
    VT_FORWARD_IF_ERROR(vt_msg_check_text(p, n, max, VT_ERR_FORMAT, what));
    memcpy(dst, p, n);
    dst[n] = 0;
    return VT_OK;
}

/* ------------------------------------------------------------------ encode */

/* The most data bytes a LOG, MANIFEST or COMMITMENT carries. */
static uint32_t log_max_data(int type)
{
    return type == VT_MSG_LOG        ? VT_MSG_LOG_MAX_DATA
           : type == VT_MSG_MANIFEST ? VT_MSG_MANIFEST_MAX
                                     : VT_MSG_COMMITMENT_LEN;
}

/* One encoder per body layout (docs/protocol.md), each checking what it is given; encode_body
 * dispatches on the type. */
static vt_err encode_hello(const vt_msg_hello *m, vt_buf *b)
{
    VT_RETURN_ERROR_IF(m->role < VT_ROLE_TRAINER || m->role > VT_ROLE_ARBITER, VT_ERR_ARG,
                       "HELLO: role %u is not 1, 2 or 3", (unsigned)m->role);
    VT_FORWARD_IF_ERROR(vt_buf_u8(b, m->role));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->pk, VT_SIGN_PK_LEN));
    return vt_buf_append(b, m->nonce, 32);
}

static vt_err encode_challenge(const vt_msg_challenge *m, vt_buf *b)
{
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->commitment, VT_MSG_COMMITMENT_LEN));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->auditor_pk, VT_SIGN_PK_LEN));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->arbiter_pk, VT_SIGN_PK_LEN));
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->claimed_step));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->auditor_state_hash, HL));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->nonce, VT_MSG_NONCE_LEN));
    VT_RETURN_ERROR_IF(m->service_len > VT_MSG_SERVICE_MAX, VT_ERR_ARG, "CHALLENGE: service record of %u bytes, at most %u",
                       (unsigned)m->service_len, VT_MSG_SERVICE_MAX);
    VT_FORWARD_IF_ERROR(vt_buf_u16le(b, m->service_len));
    return vt_buf_append(b, m->service, m->service_len);
}

static vt_err encode_q_service(const vt_msg_q_service *m, vt_buf *b)
{
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->commitment_hash, HL));
    return vt_buf_append(b, m->auditor_nonce, VT_MSG_NONCE_LEN);
}

static vt_err encode_service(const vt_msg_service *m, vt_buf *b)
{
    VT_RETURN_ERROR_IF(m->record_len > VT_MSG_SERVICE_MAX, VT_ERR_ARG, "SERVICE: a record of %u bytes, at most %u",
                       (unsigned)m->record_len, VT_MSG_SERVICE_MAX);
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->commitment_hash, HL));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->auditor_nonce, VT_MSG_NONCE_LEN));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->trainer_nonce, VT_MSG_NONCE_LEN));
    VT_FORWARD_IF_ERROR(vt_buf_u16le(b, m->record_len));
    return vt_buf_append(b, m->record, m->record_len);
}

static vt_err encode_note(const vt_msg_note *m, vt_buf *b)
{
    VT_RETURN_ERROR_IF(m->kind < VT_NOTE_GAME || m->kind > VT_NOTE_ARITH, VT_ERR_ARG, "NOTE: kind %u is not 1..4",
                       (unsigned)m->kind);
    VT_FORWARD_IF_ERROR(vt_buf_u8(b, m->kind));
    VT_FORWARD_IF_ERROR(vt_buf_u8(b, m->party));
    VT_FORWARD_IF_ERROR(vt_buf_u16le(b, m->code));
    VT_FORWARD_IF_ERROR(vt_buf_u32le(b, m->n));
    for (int i = 0; i < 4; i++) VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->v[i]));
    return put_text(b, m->text, VT_MSG_TEXT_MAX, "NOTE text");
}

static vt_err encode_hashes(const vt_msg_hashes *m, vt_buf *b)
{
    VT_RETURN_ERROR_IF(m->n > VT_MSG_HASHES_MAX, VT_ERR_ARG, "HASHES: %u hashes, at most %u", (unsigned)m->n,
                       VT_MSG_HASHES_MAX);
    VT_RETURN_ERROR_IF(m->n && !m->h, VT_ERR_ARG, "HASHES: %u hashes but no array", (unsigned)m->n);
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->a));
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->b));
    VT_FORWARD_IF_ERROR(vt_buf_u32le(b, m->n));
    return vt_buf_append(b, m->h, (size_t)m->n * HL);
}

static vt_err encode_hint(const vt_msg_hint *m, vt_buf *b)
{
    VT_RETURN_ERROR_IF(m->has > 1, VT_ERR_ARG, "HINT: has %u is not 0 or 1", (unsigned)m->has);
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->step));
    VT_FORWARD_IF_ERROR(vt_buf_u32le(b, m->op));
    VT_FORWARD_IF_ERROR(vt_buf_u8(b, m->has));
    return vt_buf_u64le(b, m->index);
}

static vt_err encode_leaf(const vt_msg_leaf *m, vt_buf *b)
{
    VT_RETURN_ERROR_IF(m->has_state > 1, VT_ERR_ARG, "LEAF: has_state %u is not 0 or 1", (unsigned)m->has_state);
    VT_RETURN_ERROR_IF(m->n_path > VT_MSG_PATH_MAX, VT_ERR_ARG, "LEAF: %u path hashes, at most %u",
                       (unsigned)m->n_path, VT_MSG_PATH_MAX);
    static const uint8_t filler[HL] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->step));
    VT_FORWARD_IF_ERROR(vt_buf_u8(b, m->has_state));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->has_state ? m->state_hash : filler, HL));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->log_hash, HL));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->leaf, HL));
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->tree_size));
    VT_FORWARD_IF_ERROR(vt_buf_u16le(b, m->n_path));
    return vt_buf_append(b, m->path, (size_t)m->n_path * HL);
}

static vt_err encode_state_claim(const vt_msg_state_claim *m, vt_buf *b)
{
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->step));
    return vt_buf_append(b, m->state_hash, HL);
}

static vt_err encode_q_chain(const vt_msg_q_chain *m, vt_buf *b)
{
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->seg_from));
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->seg_to));
    return vt_buf_u64le(b, m->pos);
}

static vt_err encode_chain_claim(const vt_msg_chain_claim *m, vt_buf *b)
{
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->seg_from));
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->seg_to));
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->pos));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->chain_hash, HL));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->output_hash, HL));
    return vt_buf_u64le(b, m->total_positions);
}

static vt_err encode_q_inputs(const vt_msg_q_inputs *m, vt_buf *b)
{
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->step));
    return vt_buf_u32le(b, m->op);
}

static vt_err encode_inputs(const vt_msg_inputs *m, vt_buf *b)
{
    VT_RETURN_ERROR_IF(m->n_tensors && !m->tensors, VT_ERR_ARG, "INPUTS: %u tensors but no array",
                       (unsigned)m->n_tensors);
    uint64_t total = body_min_[VT_MSG_INPUTS];
    for (uint32_t i = 0; i < m->n_tensors; i++) {
        const vt_msg_tensor *t = &m->tensors[i];
        uint64_t elems = (uint64_t)t->rows * t->cols;
        VT_RETURN_ERROR_IF(elems && !t->data, VT_ERR_ARG, "INPUTS: tensor %u has no data", (unsigned)i);
        VT_RETURN_ERROR_IF(elems > (VT_MSG_INPUTS_MAX_BODY - total) / 4, VT_ERR_ARG,
                           "INPUTS: tensor %u (%u x %u) exceeds the %u-byte body limit", (unsigned)i,
                           (unsigned)t->rows, (unsigned)t->cols, VT_MSG_INPUTS_MAX_BODY);
        total += 12 + elems * 4;
        VT_RETURN_ERROR_IF(total > VT_MSG_INPUTS_MAX_BODY, VT_ERR_ARG,
                           "INPUTS: body exceeds the %u-byte limit", VT_MSG_INPUTS_MAX_BODY);
    }
    VT_FORWARD_IF_ERROR(vt_buf_reserve(b, (size_t)total));
    const size_t start = b->len;
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->step));
    VT_FORWARD_IF_ERROR(vt_buf_u32le(b, m->op));
    VT_FORWARD_IF_ERROR(vt_buf_u16le(b, m->n_tensors));
    for (uint32_t i = 0; i < m->n_tensors; i++) {
        const vt_msg_tensor *t = &m->tensors[i];
        size_t elems = (size_t)t->rows * t->cols;
        VT_FORWARD_IF_ERROR(vt_buf_u32le(b, t->tensor_id));
        VT_FORWARD_IF_ERROR(vt_buf_u32le(b, t->rows));
        VT_FORWARD_IF_ERROR(vt_buf_u32le(b, t->cols));
        VT_ASSERT(b->cap - b->len >= elems * 4);
        uint8_t *dst = b->data + b->len; /* reserved above */
        for (size_t e = 0; e < elems; e++) vt_put_u32le(dst + 4 * e, vt_f32_bits(t->data[e]));
        b->len += elems * 4;
    }
    VT_ASSERT(b->len - start == total); /* the body is the length computed (and reserved) above */
    return VT_OK;
}

static vt_err encode_log(int type, const vt_msg_log *m, vt_buf *b)
{
    uint32_t maxd = log_max_data(type);
    VT_RETURN_ERROR_IF(m->len > maxd, VT_ERR_ARG, "%s: %u bytes, at most %u", vt_msg_type_name(type),
                       (unsigned)m->len, maxd);
    VT_RETURN_ERROR_IF(m->len && !m->data, VT_ERR_ARG, "LOG: %u bytes but no data", (unsigned)m->len);
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->step));
    VT_FORWARD_IF_ERROR(vt_buf_u32le(b, m->len));
    return vt_buf_append(b, m->data, m->len);
}

static vt_err encode_verdict(const vt_msg_verdict *m, vt_buf *b)
{
    VT_RETURN_ERROR_IF(m->loser > VT_LOSER_BOTH, VT_ERR_ARG, "VERDICT: loser %u is not 0..3",
                       (unsigned)m->loser);
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->commitment_hash, HL));
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->step));
    VT_FORWARD_IF_ERROR(vt_buf_u32le(b, m->op));
    VT_FORWARD_IF_ERROR(vt_buf_u8(b, m->loser));
    VT_FORWARD_IF_ERROR(vt_buf_u8(b, m->reason_code));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->arbiter_pk, VT_SIGN_PK_LEN));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->auditor_pk, VT_SIGN_PK_LEN));
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->claimed_step));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->claimed_state, HL));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->auditor_nonce, VT_MSG_NONCE_LEN));
    VT_FORWARD_IF_ERROR(vt_buf_append(b, m->trainer_nonce, VT_MSG_NONCE_LEN));
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, m->time));
    return put_text(b, m->reason, VT_MSG_TEXT_MAX, "VERDICT reason");
}

static vt_err encode_error(const vt_msg_error *m, vt_buf *b)
{
    VT_FORWARD_IF_ERROR(vt_buf_u16le(b, m->code));
    return put_text(b, m->message, VT_MSG_TEXT_MAX, "ERROR message");
}

static vt_err encode_body(int type, const void *body, vt_buf *b)
{
    switch (type) {
    case VT_MSG_HELLO:
        return encode_hello(body, b);
    case VT_MSG_CHALLENGE:
        return encode_challenge(body, b);
    case VT_MSG_Q_SERVICE:
        return encode_q_service(body, b);
    case VT_MSG_SERVICE:
        return encode_service(body, b);
    case VT_MSG_NOTE:
        return encode_note(body, b);
    case VT_MSG_Q_LEAF:
    case VT_MSG_Q_STATE:
    case VT_MSG_Q_LOG:
    case VT_MSG_Q_MANIFEST:
    case VT_MSG_Q_TENSORS:
    case VT_MSG_Q_COMMITMENT:
        return vt_buf_u64le(b, ((const vt_msg_q_step *)body)->step);
    case VT_MSG_HASHES:
        return encode_hashes(body, b);
    case VT_MSG_HINT:
        return encode_hint(body, b);
    case VT_MSG_LEAF:
        return encode_leaf(body, b);
    case VT_MSG_STATE_CLAIM:
        return encode_state_claim(body, b);
    case VT_MSG_Q_CHAIN:
    case VT_MSG_Q_PREFIX:
        return encode_q_chain(body, b);
    case VT_MSG_CHAIN_CLAIM:
        return encode_chain_claim(body, b);
    case VT_MSG_Q_INPUTS:
    case VT_MSG_Q_HINT:
    case VT_MSG_Q_OUTPUT:
        return encode_q_inputs(body, b);
    case VT_MSG_INPUTS:
        return encode_inputs(body, b);
    case VT_MSG_LOG:
    case VT_MSG_MANIFEST:
    case VT_MSG_COMMITMENT:
        return encode_log(type, body, b);
    case VT_MSG_VERDICT:
        return encode_verdict(body, b);
    case VT_MSG_ERROR:
        return encode_error(body, b);
    default:
        VT_RETURN_ERROR(VT_ERR_ARG, "unknown message type %d", type);
    }
}

vt_err vt_msg_body_encode(int type, const void *body, vt_buf *out)
{
    VT_RETURN_ERROR_IF(!type_ok(type), VT_ERR_ARG, "unknown message type %d", type);
    VT_RETURN_ERROR_IF(!body || !out, VT_ERR_ARG, "vt_msg_body_encode: NULL argument");
    size_t start = out->len;
    vt_err e = encode_body(type, body, out);
    if (e == VT_OK) {
        size_t n = out->len - start;
        if (n < body_min_[type] || n > body_max_[type])
            e = vt_set_error(VT_ERR_INTERNAL, "%s body of %zu bytes outside [%u, %u]", vt_msg_type_name(type), n,
                             body_min_[type], body_max_[type]);
    }
    if (e != VT_OK) out->len = start; /* "out unchanged" (capacity may have grown) */
    return e;
}

vt_err vt_msg_encode(int type, const void *body, uint32_t seq, const vt_keypair *kp, vt_buf *out)
{
    VT_RETURN_ERROR_IF(!kp || !out, VT_ERR_ARG, "vt_msg_encode: NULL argument");
    size_t start = out->len;
    uint8_t hdr[VT_MSG_HEADER_LEN];
    memset(hdr, 0, sizeof hdr);
    vt_err e = vt_buf_append(out, hdr, sizeof hdr);
    if (e == VT_OK) e = vt_msg_body_encode(type, body, out);
    if (e == VT_OK) {
        size_t blen = out->len - start - VT_MSG_HEADER_LEN;
        uint8_t *h = out->data + start;
        memcpy(h, VT_MSG_MAGIC, 4);
        vt_put_u16le(h + 4, (uint16_t)VT_MSG_VERSION);
        vt_put_u16le(h + 6, (uint16_t)type);
        vt_put_u32le(h + 8, seq);
        vt_put_u32le(h + 12, (uint32_t)blen);
        e = vt_buf_reserve(out, VT_MSG_SIG_LEN);
        if (e == VT_OK) {
            /* the buffer may have moved: recompute the header pointer */
            e = vt_sign_detached(kp, out->data + start, VT_MSG_HEADER_LEN + blen, out->data + out->len);
            if (e == VT_OK) out->len += VT_MSG_SIG_LEN;
        }
        VT_ASSERT(e != VT_OK || out->len - start == VT_MSG_HEADER_LEN + blen + VT_MSG_SIG_LEN);
    }
    if (e != VT_OK) out->len = start;
    return e;
}

/* ------------------------------------------------------------------ decode */

vt_err vt_msg_parse_header(const uint8_t *p, const vt_msg_limits *limits, vt_msg_header *h)
{
    VT_RETURN_ERROR_IF(!p || !h, VT_ERR_ARG, "vt_msg_parse_header: NULL argument");
    VT_RETURN_ERROR_IF(memcmp(p, VT_MSG_MAGIC, 4) != 0, VT_ERR_FORMAT, "message: bad magic");
    uint16_t version = vt_get_u16le(p + 4), type = vt_get_u16le(p + 6);
    uint32_t seq = vt_get_u32le(p + 8), blen = vt_get_u32le(p + 12);
    VT_RETURN_ERROR_IF(version != VT_MSG_VERSION, VT_ERR_FORMAT, "message: unsupported version %u",
                       (unsigned)version);
    VT_RETURN_ERROR_IF(!type_ok(type), VT_ERR_FORMAT, "message: unknown type %u", (unsigned)type);
    uint32_t max = vt_msg_max_body(type, limits);
    VT_RETURN_ERROR_IF(blen > max, VT_ERR_LIMIT, "%s message: body of %u bytes exceeds the limit of %u",
                       vt_msg_type_name(type), (unsigned)blen, (unsigned)max);
    VT_RETURN_ERROR_IF(blen < body_min_[type], VT_ERR_FORMAT, "%s message: body of %u bytes, at least %u needed",
                       vt_msg_type_name(type), (unsigned)blen, (unsigned)body_min_[type]);
    VT_RETURN_ERROR_IF(body_min_[type] == body_max_[type] && blen != body_min_[type], VT_ERR_FORMAT,
                       "%s message: body of %u bytes, exactly %u expected", vt_msg_type_name(type), (unsigned)blen,
                       (unsigned)body_min_[type]);
    h->version = version;
    h->type = type;
    h->seq = seq;
    h->body_len = blen;
    return VT_OK;
}

static vt_err decode_inputs(vt_reader *r, vt_msg_inputs *m)
{
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->step, "INPUTS step"));
    VT_FORWARD_IF_ERROR(vt_read_u32le(r, &m->op, "INPUTS op"));
    uint16_t nt;
    VT_FORWARD_IF_ERROR(vt_read_u16le(r, &nt, "INPUTS n_tensors"));
    /* each tensor needs at least its 12-byte header: check before allocating */
    VT_RETURN_ERROR_IF((size_t)nt * 12 > vt_reader_left(r), VT_ERR_FORMAT,
                       "INPUTS: %u tensors cannot fit in %zu bytes", (unsigned)nt, vt_reader_left(r));
    if (nt == 0) return VT_OK;
    m->tensors = calloc(nt, sizeof *m->tensors);
    VT_RETURN_ERROR_IF(!m->tensors, VT_ERR_NOMEM, "INPUTS: out of memory");
    m->n_tensors = nt;
    for (uint32_t i = 0; i < nt; i++) {
        vt_msg_tensor *t = &m->tensors[i];
        VT_FORWARD_IF_ERROR(vt_read_u32le(r, &t->tensor_id, "INPUTS tensor_id"));
        VT_FORWARD_IF_ERROR(vt_read_u32le(r, &t->rows, "INPUTS rows"));
        VT_FORWARD_IF_ERROR(vt_read_u32le(r, &t->cols, "INPUTS cols"));
        uint64_t elems = (uint64_t)t->rows * t->cols; /* < 2^64: no overflow */
        VT_RETURN_ERROR_IF(elems > vt_reader_left(r) / 4, VT_ERR_FORMAT,
                           "INPUTS: tensor %u (%u x %u) needs more than the %zu bytes left", (unsigned)i,
                           (unsigned)t->rows, (unsigned)t->cols, vt_reader_left(r));
        if (elems == 0) continue;
        const uint8_t *src;
        VT_FORWARD_IF_ERROR(vt_read_skip(r, &src, (size_t)elems * 4, "INPUTS data"));
        t->data = malloc((size_t)elems * sizeof(float));
        VT_RETURN_ERROR_IF(!t->data, VT_ERR_NOMEM, "INPUTS: out of memory for %llu values",
                           (unsigned long long)elems);
        for (size_t e = 0; e < (size_t)elems; e++) t->data[e] = vt_bits_f32(vt_get_u32le(src + 4 * e));
    }
    return VT_OK;
}

/* One decoder per body layout; decode_body dispatches on the type. */
static vt_err decode_hello(vt_reader *r, vt_msg_hello *m)
{
    VT_FORWARD_IF_ERROR(vt_read_u8(r, &m->role, "HELLO role"));
    VT_RETURN_ERROR_IF(m->role < VT_ROLE_TRAINER || m->role > VT_ROLE_ARBITER, VT_ERR_FORMAT,
                       "HELLO: role %u is not 1, 2 or 3", (unsigned)m->role);
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->pk, VT_SIGN_PK_LEN, "HELLO pubkey"));
    return vt_read_bytes(r, m->nonce, 32, "HELLO nonce");
}

static vt_err decode_challenge(vt_reader *r, vt_msg_challenge *m)
{
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->commitment, VT_MSG_COMMITMENT_LEN, "CHALLENGE commitment"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->auditor_pk, VT_SIGN_PK_LEN, "CHALLENGE auditor_pk"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->arbiter_pk, VT_SIGN_PK_LEN, "CHALLENGE arbiter_pk"));
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->claimed_step, "CHALLENGE claimed_step"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->auditor_state_hash, HL, "CHALLENGE state hash"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->nonce, VT_MSG_NONCE_LEN, "CHALLENGE nonce"));
    const uint8_t *p;
    VT_FORWARD_IF_ERROR(vt_read_u16le(r, &m->service_len, "CHALLENGE service length"));
    VT_RETURN_ERROR_IF(m->service_len > VT_MSG_SERVICE_MAX, VT_ERR_FORMAT,
                       "CHALLENGE: service record of %u bytes, at most %u", (unsigned)m->service_len,
                       VT_MSG_SERVICE_MAX);
    VT_RETURN_ERROR_IF(m->service_len != vt_reader_left(r), VT_ERR_FORMAT,
                       "CHALLENGE: service record of %u bytes but %zu bytes follow", (unsigned)m->service_len,
                       vt_reader_left(r));
    VT_FORWARD_IF_ERROR(vt_read_skip(r, &p, m->service_len, "CHALLENGE service record"));
    memcpy(m->service, p, m->service_len);
    return VT_OK;
}

static vt_err decode_q_service(vt_reader *r, vt_msg_q_service *m)
{
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->commitment_hash, HL, "Q_SERVICE commitment_hash"));
    return vt_read_bytes(r, m->auditor_nonce, VT_MSG_NONCE_LEN, "Q_SERVICE nonce");
}

static vt_err decode_service(vt_reader *r, vt_msg_service *m)
{
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->commitment_hash, HL, "SERVICE commitment_hash"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->auditor_nonce, VT_MSG_NONCE_LEN, "SERVICE auditor nonce"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->trainer_nonce, VT_MSG_NONCE_LEN, "SERVICE trainer nonce"));
    VT_FORWARD_IF_ERROR(vt_read_u16le(r, &m->record_len, "SERVICE record length"));
    VT_RETURN_ERROR_IF(m->record_len > VT_MSG_SERVICE_MAX, VT_ERR_FORMAT, "SERVICE: a record of %u bytes, at most %u",
                       (unsigned)m->record_len, VT_MSG_SERVICE_MAX);
    VT_RETURN_ERROR_IF(m->record_len != vt_reader_left(r), VT_ERR_FORMAT,
                       "SERVICE: a record of %u bytes but %zu bytes follow", (unsigned)m->record_len,
                       vt_reader_left(r));
    return vt_read_bytes(r, m->record, m->record_len, "SERVICE record");
}

static vt_err decode_note(vt_reader *r, vt_msg_note *m)
{
    VT_FORWARD_IF_ERROR(vt_read_u8(r, &m->kind, "NOTE kind"));
    VT_RETURN_ERROR_IF(m->kind < VT_NOTE_GAME || m->kind > VT_NOTE_ARITH, VT_ERR_FORMAT,
                       "NOTE: kind %u is not 1..4", (unsigned)m->kind);
    VT_FORWARD_IF_ERROR(vt_read_u8(r, &m->party, "NOTE party"));
    VT_FORWARD_IF_ERROR(vt_read_u16le(r, &m->code, "NOTE code"));
    VT_FORWARD_IF_ERROR(vt_read_u32le(r, &m->n, "NOTE n"));
    for (int i = 0; i < 4; i++) VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->v[i], "NOTE value"));
    return get_text(r, m->text, VT_MSG_TEXT_MAX, "NOTE text");
}

static vt_err decode_hashes(vt_reader *r, vt_msg_hashes *m)
{
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->a, "HASHES a"));
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->b, "HASHES b"));
    uint32_t n;
    VT_FORWARD_IF_ERROR(vt_read_u32le(r, &n, "HASHES n"));
    VT_RETURN_ERROR_IF(n > VT_MSG_HASHES_MAX, VT_ERR_LIMIT, "HASHES: %u hashes, at most %u", (unsigned)n,
                       VT_MSG_HASHES_MAX);
    VT_RETURN_ERROR_IF((size_t)n * HL != vt_reader_left(r), VT_ERR_FORMAT, "HASHES: %u hashes but %zu bytes follow",
                       (unsigned)n, vt_reader_left(r));
    if (n == 0) return VT_OK;
    m->h = malloc((size_t)n * HL);
    VT_RETURN_ERROR_IF(!m->h, VT_ERR_NOMEM, "HASHES: out of memory");
    m->n = n;
    return vt_read_bytes(r, m->h, (size_t)n * HL, "HASHES hashes");
}

static vt_err decode_hint(vt_reader *r, vt_msg_hint *m)
{
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->step, "HINT step"));
    VT_FORWARD_IF_ERROR(vt_read_u32le(r, &m->op, "HINT op"));
    VT_FORWARD_IF_ERROR(vt_read_u8(r, &m->has, "HINT has"));
    VT_RETURN_ERROR_IF(m->has > 1, VT_ERR_FORMAT, "HINT: has %u is not 0 or 1", (unsigned)m->has);
    return vt_read_u64le(r, &m->index, "HINT index");
}

static vt_err decode_leaf(vt_reader *r, vt_msg_leaf *m)
{
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->step, "LEAF step"));
    VT_FORWARD_IF_ERROR(vt_read_u8(r, &m->has_state, "LEAF has_state"));
    VT_RETURN_ERROR_IF(m->has_state > 1, VT_ERR_FORMAT, "LEAF: has_state %u is not 0 or 1",
                       (unsigned)m->has_state);
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->state_hash, HL, "LEAF state_hash"));
    if (!m->has_state) {
        for (unsigned i = 0; i < HL; i++)
            VT_RETURN_ERROR_IF(m->state_hash[i] != 0xff, VT_ERR_FORMAT,
                               "LEAF: has_state = 0 but the state hash is not the 0xFF filler");
    }
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->log_hash, HL, "LEAF log_hash"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->leaf, HL, "LEAF leaf"));
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->tree_size, "LEAF tree_size"));
    VT_FORWARD_IF_ERROR(vt_read_u16le(r, &m->n_path, "LEAF n_path"));
    VT_RETURN_ERROR_IF(m->n_path > VT_MSG_PATH_MAX, VT_ERR_FORMAT, "LEAF: %u path hashes, at most %u",
                       (unsigned)m->n_path, VT_MSG_PATH_MAX);
    return vt_read_bytes(r, m->path, (size_t)m->n_path * HL, "LEAF path");
}

static vt_err decode_state_claim(vt_reader *r, vt_msg_state_claim *m)
{
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->step, "STATE_CLAIM step"));
    return vt_read_bytes(r, m->state_hash, HL, "STATE_CLAIM state_hash");
}

static vt_err decode_q_chain(vt_reader *r, vt_msg_q_chain *m)
{
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->seg_from, "Q_CHAIN seg_from"));
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->seg_to, "Q_CHAIN seg_to"));
    return vt_read_u64le(r, &m->pos, "Q_CHAIN pos");
}

static vt_err decode_chain_claim(vt_reader *r, vt_msg_chain_claim *m)
{
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->seg_from, "CHAIN_CLAIM seg_from"));
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->seg_to, "CHAIN_CLAIM seg_to"));
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->pos, "CHAIN_CLAIM pos"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->chain_hash, HL, "CHAIN_CLAIM chain_hash"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->output_hash, HL, "CHAIN_CLAIM output_hash"));
    return vt_read_u64le(r, &m->total_positions, "CHAIN_CLAIM total_positions");
}

static vt_err decode_q_inputs(vt_reader *r, vt_msg_q_inputs *m)
{
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->step, "Q_INPUTS step"));
    return vt_read_u32le(r, &m->op, "Q_INPUTS op");
}

static vt_err decode_log(int type, vt_reader *r, vt_msg_log *m)
{
    uint32_t maxd = log_max_data(type);
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->step, "LOG step"));
    uint32_t len;
    VT_FORWARD_IF_ERROR(vt_read_u32le(r, &len, "LOG len"));
    VT_RETURN_ERROR_IF(len > maxd, VT_ERR_LIMIT, "%s: %u bytes exceed the limit of %u", vt_msg_type_name(type),
                       (unsigned)len, maxd);
    VT_RETURN_ERROR_IF(len != vt_reader_left(r), VT_ERR_FORMAT, "LOG: length %u but %zu bytes follow",
                       (unsigned)len, vt_reader_left(r));
    if (len == 0) return VT_OK;
    const uint8_t *src;
    VT_FORWARD_IF_ERROR(vt_read_skip(r, &src, len, "LOG data"));
    m->data = malloc(len);
    VT_RETURN_ERROR_IF(!m->data, VT_ERR_NOMEM, "LOG: out of memory for %u bytes", (unsigned)len);
    memcpy(m->data, src, len);
    m->len = len;
    return VT_OK;
}

static vt_err decode_verdict(vt_reader *r, vt_msg_verdict *m)
{
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->commitment_hash, HL, "VERDICT commitment_hash"));
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->step, "VERDICT step"));
    VT_FORWARD_IF_ERROR(vt_read_u32le(r, &m->op, "VERDICT op"));
    VT_FORWARD_IF_ERROR(vt_read_u8(r, &m->loser, "VERDICT loser"));
    VT_RETURN_ERROR_IF(m->loser > VT_LOSER_BOTH, VT_ERR_FORMAT, "VERDICT: loser %u is not 0..3",
                       (unsigned)m->loser);
    VT_FORWARD_IF_ERROR(vt_read_u8(r, &m->reason_code, "VERDICT reason_code"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->arbiter_pk, VT_SIGN_PK_LEN, "VERDICT arbiter_pk"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->auditor_pk, VT_SIGN_PK_LEN, "VERDICT auditor_pk"));
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->claimed_step, "VERDICT claimed_step"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->claimed_state, HL, "VERDICT claimed_state"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->auditor_nonce, VT_MSG_NONCE_LEN, "VERDICT auditor nonce"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, m->trainer_nonce, VT_MSG_NONCE_LEN, "VERDICT trainer nonce"));
    VT_FORWARD_IF_ERROR(vt_read_u64le(r, &m->time, "VERDICT time"));
    return get_text(r, m->reason, VT_MSG_TEXT_MAX, "VERDICT reason");
}

static vt_err decode_error(vt_reader *r, vt_msg_error *m)
{
    VT_FORWARD_IF_ERROR(vt_read_u16le(r, &m->code, "ERROR code"));
    return get_text(r, m->message, VT_MSG_TEXT_MAX, "ERROR message");
}

static vt_err decode_body(int type, vt_reader *r, vt_msg_body *out)
{
    switch (type) {
    case VT_MSG_HELLO:
        return decode_hello(r, &out->hello);
    case VT_MSG_CHALLENGE:
        return decode_challenge(r, &out->challenge);
    case VT_MSG_Q_SERVICE:
        return decode_q_service(r, &out->q_service);
    case VT_MSG_SERVICE:
        return decode_service(r, &out->service);
    case VT_MSG_NOTE:
        return decode_note(r, &out->note);
    case VT_MSG_Q_LEAF:
        return vt_read_u64le(r, &out->q_leaf.step, "Q_LEAF step");
    case VT_MSG_Q_STATE:
        return vt_read_u64le(r, &out->q_state.step, "Q_STATE step");
    case VT_MSG_Q_LOG:
        return vt_read_u64le(r, &out->q_log.step, "Q_LOG step");
    case VT_MSG_Q_MANIFEST:
    case VT_MSG_Q_TENSORS:
    case VT_MSG_Q_COMMITMENT:
        return vt_read_u64le(r, &out->q_step.step, "question step");
    case VT_MSG_HASHES:
        return decode_hashes(r, &out->hashes);
    case VT_MSG_HINT:
        return decode_hint(r, &out->hint);
    case VT_MSG_LEAF:
        return decode_leaf(r, &out->leaf);
    case VT_MSG_STATE_CLAIM:
        return decode_state_claim(r, &out->state_claim);
    case VT_MSG_Q_CHAIN:
    case VT_MSG_Q_PREFIX:
        return decode_q_chain(r, &out->q_chain);
    case VT_MSG_CHAIN_CLAIM:
        return decode_chain_claim(r, &out->chain_claim);
    case VT_MSG_Q_INPUTS:
    case VT_MSG_Q_HINT:
    case VT_MSG_Q_OUTPUT:
        return decode_q_inputs(r, &out->q_inputs);
    case VT_MSG_INPUTS:
        return decode_inputs(r, &out->inputs);
    case VT_MSG_LOG:
    case VT_MSG_MANIFEST:
    case VT_MSG_COMMITMENT:
        return decode_log(type, r, &out->log);
    case VT_MSG_VERDICT:
        return decode_verdict(r, &out->verdict);
    case VT_MSG_ERROR:
        return decode_error(r, &out->error);
    default:
        VT_RETURN_ERROR(VT_ERR_FORMAT, "unknown message type %d", type);
    }
}

void vt_msg_body_free(int type, vt_msg_body *b)
{
    if (!b) return;
    if (type == VT_MSG_INPUTS) {
        if (b->inputs.tensors)
            for (uint32_t i = 0; i < b->inputs.n_tensors; i++) free(b->inputs.tensors[i].data);
        free(b->inputs.tensors);
    } else if (type == VT_MSG_LOG || type == VT_MSG_MANIFEST || type == VT_MSG_COMMITMENT) {
        free(b->log.data);
    } else if (type == VT_MSG_HASHES) {
        free(b->hashes.h);
    }
    memset(b, 0, sizeof *b);
}

vt_err vt_msg_body_decode(int type, const uint8_t *p, size_t n, vt_msg_body *out)
{
    VT_RETURN_ERROR_IF(!out, VT_ERR_ARG, "vt_msg_body_decode: NULL argument");
    memset(out, 0, sizeof *out);
    VT_RETURN_ERROR_IF(!type_ok(type), VT_ERR_FORMAT, "unknown message type %d", type);
    VT_RETURN_ERROR_IF(!p && n, VT_ERR_ARG, "vt_msg_body_decode: NULL bytes");
    VT_RETURN_ERROR_IF(n > body_max_[type], VT_ERR_LIMIT, "%s body of %zu bytes exceeds the limit of %u",
                       vt_msg_type_name(type), n, (unsigned)body_max_[type]);
    VT_RETURN_ERROR_IF(n < body_min_[type], VT_ERR_FORMAT, "%s body of %zu bytes, at least %u needed",
                       vt_msg_type_name(type), n, (unsigned)body_min_[type]);
    vt_reader r;
    vt_reader_init(&r, p, n);
    vt_err e = decode_body(type, &r, out);
    if (e == VT_OK && vt_reader_left(&r) != 0)
        e = vt_set_error(VT_ERR_FORMAT, "%s body: %zu trailing bytes", vt_msg_type_name(type), vt_reader_left(&r));
    if (e != VT_OK) vt_msg_body_free(type, out);
    return e;
}

vt_err vt_msg_decode(const uint8_t *p, size_t n, const uint8_t *expected_pk, const vt_msg_limits *limits,
                     vt_msg *out)
{
    VT_RETURN_ERROR_IF(!out, VT_ERR_ARG, "vt_msg_decode: NULL argument");
    memset(out, 0, sizeof *out);
    VT_RETURN_ERROR_IF(!p && n, VT_ERR_ARG, "vt_msg_decode: NULL bytes");
    VT_RETURN_ERROR_IF(n < VT_MSG_HEADER_LEN, VT_ERR_FORMAT, "message: %zu bytes, shorter than a header", n);
    vt_msg_header h;
    VT_FORWARD_IF_ERROR(vt_msg_parse_header(p, limits, &h));
    size_t total = (size_t)VT_MSG_OVERHEAD + h.body_len;
    VT_RETURN_ERROR_IF(n != total, VT_ERR_FORMAT, "%s message: %zu bytes, the header says %zu",
                       vt_msg_type_name(h.type), n, total);
    const uint8_t *sig = p + VT_MSG_HEADER_LEN + h.body_len;
    if (expected_pk) {
        VT_RETURN_ERROR_IF(vt_sign_verify_detached(sig, p, VT_MSG_HEADER_LEN + (size_t)h.body_len, expected_pk) != 0,
                           VT_ERR_CRYPTO, "%s message (seq %u): bad signature", vt_msg_type_name(h.type),
                           (unsigned)h.seq);
    }
    vt_err e = vt_msg_body_decode(h.type, p + VT_MSG_HEADER_LEN, h.body_len, &out->body);
    if (e != VT_OK) {
        memset(out, 0, sizeof *out);
        return e;
    }
    out->hdr = h;
    memcpy(out->sig, sig, VT_MSG_SIG_LEN);
    out->sig_verified = expected_pk != NULL;
    return VT_OK;
}

void vt_msg_free(vt_msg *m)
{
    if (!m) return;
    vt_msg_body_free(m->hdr.type, &m->body);
    free(m->raw);
    memset(m, 0, sizeof *m);
}
