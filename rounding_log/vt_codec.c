/* vt_codec.c - the step log in memory, its canonical payload and its zstd container.
 *
 * Byte layouts: docs/format.md ("Step log payload", "Step log container").
 * The decoders treat every byte as hostile: each count is checked against the
 * limits and against the bytes that are left before anything is allocated, and
 * each field that fails names itself and its offset in the error message.
 */
#include "vt_rlog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "../common/vt_bytes.h"
#include "../common/vt_hash.h"

#define VT_LOG_VERSION 1
#define VT_PAYLOAD_HEADER_LEN 20u   /* magic 4, version 2, reserved 2, step 8, n_ops 4 */
#define VT_CONTAINER_HEADER_LEN 56u /* magic 4, version 2, flags 2, step 8, payload_len 8, hash 32 */
#define VT_MIN_RECORD_LEN 7u        /* op_id 4 + three one-byte varints */

#define VT_DEFAULT_MAX_DECODED ((uint64_t)256 << 20)
#define VT_DEFAULT_MAX_OPS 65536u
#define VT_DEFAULT_MAX_ENTRIES ((uint64_t)16 << 20)
#define VT_DEFAULT_MAX_ELEMS ((uint64_t)1 << 40)

static const uint8_t payload_magic[4] = {'V', 'T', 'L', 'P'};
static const uint8_t container_magic[4] = {'V', 'T', 'L', 'Z'};

typedef unsigned long long ull; /* for printf */

/* ------------------------------------------------------------ in memory */

void vt_steplog_init(vt_steplog *l, uint64_t step)
{
    if (!l) return;
    memset(l, 0, sizeof *l);
    l->step = step;
}

void vt_steplog_free(vt_steplog *l)
{
    if (!l) return;
    if (l->ops)
        for (uint32_t i = 0; i < l->cap_ops; i++) free(l->ops[i].e);
    free(l->ops);
    vt_steplog_init(l, 0);
}

void vt_steplog_reset(vt_steplog *l, uint64_t step)
{
    if (!l) return;
    /* Slots [0, cap_ops) keep their entry arrays for reuse by vt_steplog_add_op. */
    for (uint32_t i = 0; i < l->n_ops; i++) l->ops[i].n_entries = 0;
    l->n_ops = 0;
    l->step = step;
}

/* Make room for `need` op slots. New slots are zeroed (no entry array yet). */
static vt_err reserve_ops(vt_steplog *l, uint64_t need, int exact)
{
    if (need <= l->cap_ops) return VT_OK;
    VT_RETURN_ERROR_IF(need > UINT32_MAX, VT_ERR_LIMIT, "step log: more than 2^32-1 operations");
    uint64_t cap = l->cap_ops ? l->cap_ops : 8;
    if (exact) cap = need;
    while (cap < need) cap = cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2;
    VT_RETURN_ERROR_IF(cap > SIZE_MAX / sizeof(vt_oplog), VT_ERR_NOMEM, "step log: %llu operations do not fit in memory",
                       (ull)cap);
    vt_oplog *ops = realloc(l->ops, (size_t)cap * sizeof(vt_oplog));
    VT_RETURN_ERROR_IF(!ops, VT_ERR_NOMEM, "step log: out of memory for %llu operations", (ull)cap);
    memset(ops + l->cap_ops, 0, (size_t)(cap - l->cap_ops) * sizeof(vt_oplog));
    l->ops = ops;
    l->cap_ops = (uint32_t)cap;
    return VT_OK;
}

/* Make room for `need` entries in o. */
static vt_err reserve_entries(vt_oplog *o, uint64_t need, int exact)
{
    if (need <= o->cap && (need == 0 || o->e)) return VT_OK;
    const uint64_t max = SIZE_MAX / sizeof(vt_log_entry);
    VT_RETURN_ERROR_IF(need > max, VT_ERR_NOMEM, "step log: %llu entries do not fit in memory", (ull)need);
    uint64_t cap = (o->cap && o->e) ? o->cap : 16;
    if (exact) cap = need;
    while (cap < need) cap = cap > max / 2 ? max : cap * 2;
    vt_log_entry *e = realloc(o->e, (size_t)cap * sizeof(vt_log_entry));
    VT_RETURN_ERROR_IF(!e, VT_ERR_NOMEM, "step log: out of memory for %llu entries of op %u", (ull)cap, o->op_id);
    o->e = e;
    o->cap = cap;
    return VT_OK;
}

vt_err vt_steplog_add_op(vt_steplog *l, uint32_t op_id, uint64_t n_elems, vt_oplog **out)
{
    VT_RETURN_ERROR_IF(!l || !out, VT_ERR_ARG, "vt_steplog_add_op: NULL argument");
    VT_RETURN_ERROR_IF(l->n_ops > 0 && op_id <= l->ops[l->n_ops - 1].op_id, VT_ERR_ARG,
                       "step log: op id %u after op id %u (op ids must be strictly increasing)", op_id,
                       l->ops[l->n_ops - 1].op_id);
    VT_FORWARD_IF_ERROR(reserve_ops(l, (uint64_t)l->n_ops + 1, 0));
    vt_oplog *o = &l->ops[l->n_ops++];
    o->op_id = op_id;
    o->n_elems = n_elems;
    o->n_entries = 0; /* o->e and o->cap are kept for reuse */
    *out = o;
    return VT_OK;
}

/* Rules an in-memory entry must follow; prev is the previous entry or NULL. */
static vt_err check_entry(const vt_oplog *o, const vt_log_entry *e, const vt_log_entry *prev, uint64_t i)
{
    VT_RETURN_ERROR_IF(e->index >= o->n_elems, VT_ERR_ARG, "step log: op %u entry %llu: index %llu >= n_elems %llu",
                       o->op_id, (ull)i, (ull)e->index, (ull)o->n_elems);
    VT_RETURN_ERROR_IF(prev && e->index <= prev->index, VT_ERR_ARG,
                       "step log: op %u entry %llu: index %llu after index %llu (must be strictly increasing)",
                       o->op_id, (ull)i, (ull)e->index, (ull)prev->index);
    VT_RETURN_ERROR_IF(e->is_value > 1 || e->up > 1, VT_ERR_ARG,
                       "step log: op %u entry %llu (index %llu): is_value/up must be 0 or 1", o->op_id, (ull)i,
                       (ull)e->index);
    VT_RETURN_ERROR_IF(e->is_value && e->up, VT_ERR_ARG,
                       "step log: op %u entry %llu (index %llu): a value entry must have up = 0", o->op_id, (ull)i,
                       (ull)e->index);
    VT_RETURN_ERROR_IF(!e->is_value && e->value_bits, VT_ERR_ARG,
                       "step log: op %u entry %llu (index %llu): a direction entry must have value_bits = 0",
                       o->op_id, (ull)i, (ull)e->index);
    return VT_OK;
}

vt_err vt_oplog_push(vt_oplog *o, vt_log_entry e)
{
    VT_RETURN_ERROR_IF(!o, VT_ERR_ARG, "vt_oplog_push: NULL op log");
    VT_RETURN_ERROR_IF(o->n_entries > 0 && !o->e, VT_ERR_ARG, "vt_oplog_push: corrupt op log");
    VT_FORWARD_IF_ERROR(check_entry(o, &e, o->n_entries ? &o->e[o->n_entries - 1] : NULL, o->n_entries));
    VT_FORWARD_IF_ERROR(reserve_entries(o, o->n_entries + 1, 0));
    o->e[o->n_entries++] = e;
    return VT_OK;
}

uint64_t vt_steplog_total_entries(const vt_steplog *l)
{
    uint64_t t = 0;
    if (!l || !l->ops) return 0;
    for (uint32_t i = 0; i < l->n_ops; i++)
        t = l->ops[i].n_entries > UINT64_MAX - t ? UINT64_MAX : t + l->ops[i].n_entries;
    return t;
}

/* ------------------------------------------------------------ serialize */

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    do {
        uint8_t b = (uint8_t)(v & 0x7f);
        v >>= 7;
        *p++ = b | (v ? 0x80 : 0);
    } while (v);
    return p;
}

static uint64_t bitset_len(uint64_t nbits) { return nbits / 8 + (nbits % 8 != 0); }

static int add_ovf(uint64_t *acc, uint64_t v)
{
    if (v > UINT64_MAX - *acc) return 1;
    *acc += v;
    return 0;
}

/* Validate op o (the previous op's id in prev_id when has_prev) and compute its body length. */
static vt_err op_body_len(const vt_oplog *o, int has_prev, uint32_t prev_id, uint64_t *body_len, uint64_t *n_val)
{
    VT_RETURN_ERROR_IF(has_prev && o->op_id <= prev_id, VT_ERR_ARG,
                       "step log: op id %u after op id %u (op ids must be strictly increasing)", o->op_id, prev_id);
    VT_RETURN_ERROR_IF(o->n_entries > 0 && (!o->e || o->n_entries > o->cap), VT_ERR_ARG,
                       "step log: op %u: n_entries %llu but only %llu allocated", o->op_id, (ull)o->n_entries,
                       (ull)(o->e ? o->cap : 0));
    VT_RETURN_ERROR_IF(o->n_entries > o->n_elems, VT_ERR_ARG, "step log: op %u: n_entries %llu > n_elems %llu",
                       o->op_id, (ull)o->n_entries, (ull)o->n_elems);
    uint64_t len = 0, nv = 0;
    for (uint64_t i = 0; i < o->n_entries; i++) {
        const vt_log_entry *e = &o->e[i];
        VT_FORWARD_IF_ERROR(check_entry(o, e, i ? &o->e[i - 1] : NULL, i));
        uint64_t delta = i ? e->index - o->e[i - 1].index - 1 : e->index;
        len += varint_len(delta); /* at most 10 * n_entries: no overflow for entries held in memory */
        nv += e->is_value;
    }
    uint64_t nd = o->n_entries - nv;
    int ovf = add_ovf(&len, bitset_len(o->n_entries));
    ovf |= add_ovf(&len, bitset_len(nd));
    ovf |= nv > UINT64_MAX / 4 || add_ovf(&len, 4 * nv);
    VT_RETURN_ERROR_IF(ovf, VT_ERR_LIMIT, "step log: op %u: body size overflows", o->op_id);
    *body_len = len;
    *n_val = nv;
    return VT_OK;
}

static uint8_t *write_op(uint8_t *p, const vt_oplog *o, uint64_t body_len)
{
    uint64_t n = o->n_entries;
    vt_put_u32le(p, o->op_id);
    p += 4;
    p = put_varint(p, o->n_elems);
    p = put_varint(p, n);
    p = put_varint(p, body_len);
    for (uint64_t i = 0; i < n; i++) p = put_varint(p, i ? o->e[i].index - o->e[i - 1].index - 1 : o->e[i].index);
    uint8_t *kind = p;
    size_t kind_len = (size_t)bitset_len(n);
    memset(kind, 0, kind_len);
    uint64_t nd = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (o->e[i].is_value)
            kind[i / 8] |= (uint8_t)(1u << (i % 8));
        else
            nd++;
    }
    p += kind_len;
    uint8_t *dir = p;
    size_t dir_len = (size_t)bitset_len(nd);
    memset(dir, 0, dir_len);
    uint64_t j = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (o->e[i].is_value) continue;
        if (o->e[i].up) dir[j / 8] |= (uint8_t)(1u << (j % 8));
        j++;
    }
    p += dir_len;
    for (uint64_t i = 0; i < n; i++) {
        if (!o->e[i].is_value) continue;
        vt_put_u32le(p, o->e[i].value_bits);
        p += 4;
    }
    return p;
}

vt_err vt_steplog_serialize(const vt_steplog *l, uint8_t **out, size_t *out_len)
{
    VT_RETURN_ERROR_IF(!l || !out || !out_len, VT_ERR_ARG, "vt_steplog_serialize: NULL argument");
    *out = NULL;
    *out_len = 0;
    VT_RETURN_ERROR_IF(l->n_ops > 0 && !l->ops, VT_ERR_ARG, "vt_steplog_serialize: n_ops %u but no ops", l->n_ops);

    /* Pass 1: validate everything and size the payload. */
    uint64_t total = VT_PAYLOAD_HEADER_LEN;
    for (uint32_t i = 0; i < l->n_ops; i++) {
        const vt_oplog *o = &l->ops[i];
        uint64_t body_len, nv;
        VT_FORWARD_IF_ERROR(op_body_len(o, i > 0, i ? l->ops[i - 1].op_id : 0, &body_len, &nv));
        uint64_t rec = 4 + varint_len(o->n_elems) + varint_len(o->n_entries) + varint_len(body_len);
        VT_RETURN_ERROR_IF(add_ovf(&rec, body_len) || add_ovf(&total, rec), VT_ERR_LIMIT,
                           "step log: payload size overflows");
    }
    VT_RETURN_ERROR_IF(total > SIZE_MAX, VT_ERR_LIMIT, "step log: payload of %llu bytes does not fit in memory",
                       (ull)total);

    /* Pass 2: write. */
    uint8_t *buf = malloc((size_t)total);
    VT_RETURN_ERROR_IF(!buf, VT_ERR_NOMEM, "step log: out of memory for a %llu-byte payload", (ull)total);
    uint8_t *p = buf;
    memcpy(p, payload_magic, 4);
    vt_put_u16le(p + 4, VT_LOG_VERSION);
    vt_put_u16le(p + 6, 0);
    vt_put_u64le(p + 8, l->step);
    vt_put_u32le(p + 16, l->n_ops);
    p += VT_PAYLOAD_HEADER_LEN;
    for (uint32_t i = 0; i < l->n_ops; i++) {
        uint64_t body_len, nv;
        /* Already validated in pass 1; recomputing the length is cheap and avoids a side array. */
        if (op_body_len(&l->ops[i], i > 0, i ? l->ops[i - 1].op_id : 0, &body_len, &nv) != VT_OK) {
            free(buf);
            VT_RETURN_ERROR(VT_ERR_INTERNAL, "step log: op %u changed during serialisation", l->ops[i].op_id);
        }
        p = write_op(p, &l->ops[i], body_len);
    }
    size_t written = (size_t)(p - buf);
    if ((uint64_t)written != total) {
        free(buf);
        VT_RETURN_ERROR(VT_ERR_INTERNAL, "step log: wrote %zu bytes, sized %llu", written, (ull)total);
    }
    *out = buf;
    *out_len = (size_t)total;
    return VT_OK;
}

vt_err vt_steplog_hash(const vt_steplog *l, uint8_t hash[32])
{
    VT_RETURN_ERROR_IF(!l || !hash, VT_ERR_ARG, "vt_steplog_hash: NULL argument");
    uint8_t *p;
    size_t n;
    VT_FORWARD_IF_ERROR(vt_steplog_serialize(l, &p, &n));
    vt_err e = vt_sha256(p, n, hash);
    free(p);
    return e;
}

/* ------------------------------------------------------------ parse */

static void resolve_limits(const vt_log_limits *in, vt_log_limits *out)
{
    vt_log_limits z = {0, 0, 0, 0};
    if (!in) in = &z;
    out->max_decoded_bytes = in->max_decoded_bytes ? in->max_decoded_bytes : VT_DEFAULT_MAX_DECODED;
    out->max_ops = in->max_ops ? in->max_ops : VT_DEFAULT_MAX_OPS;
    out->max_entries = in->max_entries ? in->max_entries : VT_DEFAULT_MAX_ENTRIES;
    out->max_elems = in->max_elems ? in->max_elems : VT_DEFAULT_MAX_ELEMS;
}

/* Prefix the current error message with context. */
static vt_err with_context(vt_err e, uint32_t rec, size_t off)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", vt_errmsg());
    return vt_set_error(e, "step log payload: op record %u at offset %zu: %s", rec, off, msg);
}

/* Check that the bits of the last byte of a bitset of nbits bits above nbits are zero. */
static vt_err check_padding(const uint8_t *bits, uint64_t nbits, size_t off, const char *what)
{
    if (nbits % 8 == 0) return VT_OK;
    size_t last = (size_t)(nbits / 8);
    VT_RETURN_ERROR_IF(bits[last] >> (nbits % 8), VT_ERR_FORMAT,
                       "nonzero padding bits in the %s (byte 0x%02x at offset %zu, %u bits used)", what, bits[last],
                       off + last, (unsigned)(nbits % 8));
    return VT_OK;
}

/* Body of op record o: r covers exactly up to the end of the body. */
static vt_err parse_body(vt_reader *r, vt_oplog *o, uint64_t n)
{
    uint64_t prev = 0;
    for (uint64_t k = 0; k < n; k++) {
        size_t off = r->pos;
        uint64_t d, idx;
        VT_FORWARD_IF_ERROR(vt_read_varint(r, &d, "index delta"));
        if (k == 0) {
            idx = d;
        } else {
            /* prev < n_elems <= UINT64_MAX, so prev + 1 does not overflow. */
            VT_RETURN_ERROR_IF(d > UINT64_MAX - (prev + 1), VT_ERR_FORMAT,
                               "index delta %llu of entry %llu at offset %zu overflows 64 bits", (ull)d, (ull)k, off);
            idx = prev + 1 + d;
        }
        VT_RETURN_ERROR_IF(idx >= o->n_elems, VT_ERR_FORMAT, "index %llu of entry %llu at offset %zu >= n_elems %llu",
                           (ull)idx, (ull)k, off, (ull)o->n_elems);
        o->e[k] = (vt_log_entry){.index = idx, .value_bits = 0, .is_value = 0, .up = 0};
        prev = idx;
    }
    o->n_entries = n;

    const uint8_t *kind;
    size_t kind_off = r->pos;
    VT_FORWARD_IF_ERROR(vt_read_skip(r, &kind, (size_t)bitset_len(n), "kind bitset"));
    VT_FORWARD_IF_ERROR(check_padding(kind, n, kind_off, "kind bitset"));
    uint64_t nv = 0;
    for (uint64_t k = 0; k < n; k++) {
        uint8_t v = (kind[k / 8] >> (k % 8)) & 1;
        o->e[k].is_value = v;
        nv += v;
    }

    const uint8_t *dir;
    size_t dir_off = r->pos;
    uint64_t nd = n - nv;
    VT_FORWARD_IF_ERROR(vt_read_skip(r, &dir, (size_t)bitset_len(nd), "direction bitset"));
    VT_FORWARD_IF_ERROR(check_padding(dir, nd, dir_off, "direction bitset"));
    uint64_t j = 0;
    for (uint64_t k = 0; k < n; k++) {
        if (o->e[k].is_value) continue;
        o->e[k].up = (dir[j / 8] >> (j % 8)) & 1;
        j++;
    }

    VT_RETURN_ERROR_IF(nv > vt_reader_left(r) / 4, VT_ERR_FORMAT,
                       "truncated input: %llu values need %llu bytes at offset %zu, %zu left in the body", (ull)nv,
                       (ull)nv * 4, r->pos, vt_reader_left(r));
    for (uint64_t k = 0; k < n; k++) {
        if (!o->e[k].is_value) continue;
        uint32_t v;
        VT_FORWARD_IF_ERROR(vt_read_u32le(r, &v, "value"));
        o->e[k].value_bits = v;
    }
    return VT_OK;
}

static vt_err parse_inner(const uint8_t *buf, size_t len, const vt_log_limits *lim, vt_steplog *l)
{
    vt_reader r;
    vt_reader_init(&r, buf, len);
    VT_RETURN_ERROR_IF((uint64_t)len > lim->max_decoded_bytes, VT_ERR_LIMIT,
                       "step log payload: %zu bytes exceed the limit of %llu", len, (ull)lim->max_decoded_bytes);

    uint8_t magic[4];
    uint16_t version, reserved;
    uint64_t step;
    uint32_t n_ops;
    VT_FORWARD_IF_ERROR(vt_read_bytes(&r, magic, 4, "payload magic"));
    VT_RETURN_ERROR_IF(memcmp(magic, payload_magic, 4) != 0, VT_ERR_FORMAT,
                       "step log payload: bad magic at offset 0 (expected \"VTLP\")");
    VT_FORWARD_IF_ERROR(vt_read_u16le(&r, &version, "payload version"));
    VT_RETURN_ERROR_IF(version != VT_LOG_VERSION, VT_ERR_FORMAT,
                       "step log payload: unsupported version %u at offset 4 (expected %u)", version, VT_LOG_VERSION);
    VT_FORWARD_IF_ERROR(vt_read_u16le(&r, &reserved, "payload reserved field"));
    VT_RETURN_ERROR_IF(reserved != 0, VT_ERR_FORMAT, "step log payload: reserved field at offset 6 is %u, must be 0",
                       reserved);
    VT_FORWARD_IF_ERROR(vt_read_u64le(&r, &step, "step"));
    VT_FORWARD_IF_ERROR(vt_read_u32le(&r, &n_ops, "n_ops"));
    VT_RETURN_ERROR_IF(n_ops > lim->max_ops, VT_ERR_LIMIT, "step log payload: n_ops %u at offset 16 exceeds the limit %u",
                       n_ops, lim->max_ops);
    VT_RETURN_ERROR_IF(n_ops > vt_reader_left(&r) / VT_MIN_RECORD_LEN, VT_ERR_FORMAT,
                       "step log payload: n_ops %u at offset 16 needs at least %llu bytes, %zu left", n_ops,
                       (ull)n_ops * VT_MIN_RECORD_LEN, vt_reader_left(&r));

    vt_steplog_reset(l, step);
    VT_FORWARD_IF_ERROR(reserve_ops(l, n_ops, 1));

    uint64_t total = 0;
    uint32_t prev_id = 0;
    for (uint32_t i = 0; i < n_ops; i++) {
        const size_t rec = r.pos;
        uint32_t op_id;
        uint64_t n_elems, n_entries, body_len;
        vt_err e;
#define TRY(expr)                                                  \
    do {                                                           \
        if ((e = (expr)) != VT_OK) return with_context(e, i, rec); \
    } while (0)
#define FAIL_IF(cond, err, ...)                                     \
    do {                                                            \
        if (cond) return with_context(vt_set_error((err), __VA_ARGS__), i, rec); \
    } while (0)
        TRY(vt_read_u32le(&r, &op_id, "op_id"));
        FAIL_IF(i > 0 && op_id <= prev_id, VT_ERR_FORMAT, "op_id %u at offset %zu not greater than the previous %u",
                op_id, rec, prev_id);
        size_t off = r.pos;
        TRY(vt_read_varint(&r, &n_elems, "n_elems"));
        FAIL_IF(n_elems > lim->max_elems, VT_ERR_LIMIT, "n_elems %llu at offset %zu exceeds the limit %llu",
                (ull)n_elems, off, (ull)lim->max_elems);
        off = r.pos;
        TRY(vt_read_varint(&r, &n_entries, "n_entries"));
        FAIL_IF(n_entries > n_elems, VT_ERR_FORMAT, "n_entries %llu at offset %zu > n_elems %llu", (ull)n_entries, off,
                (ull)n_elems);
        size_t ne_off = off;
        off = r.pos;
        TRY(vt_read_varint(&r, &body_len, "body_len"));
        FAIL_IF(body_len > vt_reader_left(&r), VT_ERR_FORMAT,
                "body_len %llu at offset %zu exceeds the %zu bytes left", (ull)body_len, off, vt_reader_left(&r));
        /* Every entry takes at least one byte (its index varint) of the body. */
        FAIL_IF(n_entries > body_len, VT_ERR_FORMAT, "n_entries %llu at offset %zu exceeds body_len %llu",
                (ull)n_entries, ne_off, (ull)body_len);
        FAIL_IF(n_entries > lim->max_entries - total, VT_ERR_LIMIT,
                "n_entries %llu at offset %zu brings the step's entries over the limit %llu", (ull)n_entries, ne_off,
                (ull)lim->max_entries);
        total += n_entries;

        vt_oplog *o = &l->ops[l->n_ops++];
        o->op_id = op_id;
        o->n_elems = n_elems;
        o->n_entries = 0;
        TRY(reserve_entries(o, n_entries, 1));

        const size_t body = r.pos, body_end = r.pos + (size_t)body_len;
        vt_reader br;
        vt_reader_init(&br, buf, body_end);
        br.pos = body;
        TRY(parse_body(&br, o, n_entries));
        FAIL_IF(br.pos != body_end, VT_ERR_FORMAT,
                "body_len %llu at offset %zu but the body (%llu entries) takes %zu bytes", (ull)body_len, off,
                (ull)n_entries, br.pos - body);
        r.pos = body_end;
        prev_id = op_id;
#undef TRY
#undef FAIL_IF
    }
    VT_RETURN_ERROR_IF(vt_reader_left(&r) != 0, VT_ERR_FORMAT,
                       "step log payload: %zu trailing bytes at offset %zu after the last op record",
                       vt_reader_left(&r), r.pos);
    return VT_OK;
}

vt_err vt_steplog_parse(const uint8_t *buf, size_t len, const vt_log_limits *lim, vt_steplog *l)
{
    VT_RETURN_ERROR_IF(!l, VT_ERR_ARG, "vt_steplog_parse: NULL log");
    vt_err e;
    if (!buf && len) {
        e = vt_set_error(VT_ERR_ARG, "vt_steplog_parse: NULL buffer");
    } else {
        vt_log_limits L;
        resolve_limits(lim, &L);
        e = parse_inner(buf, len, &L, l);
    }
    if (e != VT_OK) vt_steplog_free(l);
    return e;
}

/* ------------------------------------------------------------ container */

vt_err vt_steplog_encode(const vt_steplog *l, int zstd_level, uint8_t **out, size_t *out_len, uint8_t hash[32])
{
    VT_RETURN_ERROR_IF(!l || !out || !out_len, VT_ERR_ARG, "vt_steplog_encode: NULL argument");
    *out = NULL;
    *out_len = 0;
    VT_RETURN_ERROR_IF(zstd_level < ZSTD_minCLevel() || zstd_level > ZSTD_maxCLevel(), VT_ERR_ARG,
                       "vt_steplog_encode: zstd level %d outside [%d, %d]", zstd_level, ZSTD_minCLevel(),
                       ZSTD_maxCLevel());
    uint8_t *p;
    size_t n;
    uint8_t h[VT_HASH_LEN];
    VT_FORWARD_IF_ERROR(vt_steplog_serialize(l, &p, &n));
    vt_err e = vt_sha256(p, n, h);
    if (e != VT_OK) {
        free(p);
        return e;
    }
    size_t bound = ZSTD_compressBound(n);
    if (ZSTD_isError(bound) || bound > SIZE_MAX - VT_CONTAINER_HEADER_LEN) {
        free(p);
        VT_RETURN_ERROR(VT_ERR_LIMIT, "step log: a %zu-byte payload is too large for zstd", n);
    }
    uint8_t *buf = malloc(VT_CONTAINER_HEADER_LEN + bound);
    if (!buf) {
        free(p);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "step log: out of memory for a %zu-byte container",
                        VT_CONTAINER_HEADER_LEN + bound);
    }
    memcpy(buf, container_magic, 4);
    vt_put_u16le(buf + 4, VT_LOG_VERSION);
    vt_put_u16le(buf + 6, 0);
    vt_put_u64le(buf + 8, l->step);
    vt_put_u64le(buf + 16, (uint64_t)n);
    memcpy(buf + 24, h, VT_HASH_LEN);
    /* The simple API always writes the content size into the frame header. */
    size_t c = ZSTD_compress(buf + VT_CONTAINER_HEADER_LEN, bound, p, n, zstd_level);
    free(p);
    if (ZSTD_isError(c)) {
        free(buf);
        VT_RETURN_ERROR(VT_ERR_INTERNAL, "step log: zstd compression failed: %s", ZSTD_getErrorName(c));
    }
    size_t total = VT_CONTAINER_HEADER_LEN + c;
    uint8_t *shrunk = realloc(buf, total);
    if (shrunk) buf = shrunk;
    *out = buf;
    *out_len = total;
    if (hash) memcpy(hash, h, VT_HASH_LEN);
    return VT_OK;
}

static vt_err decode_inner(const uint8_t *buf, size_t len, const vt_log_limits *lim, vt_steplog *l,
                           uint8_t hash[32])
{
    vt_reader r;
    vt_reader_init(&r, buf, len);
    uint8_t magic[4], want[VT_HASH_LEN], got[VT_HASH_LEN];
    uint16_t version, flags;
    uint64_t step, payload_len;
    VT_FORWARD_IF_ERROR(vt_read_bytes(&r, magic, 4, "container magic"));
    VT_RETURN_ERROR_IF(memcmp(magic, container_magic, 4) != 0, VT_ERR_FORMAT,
                       "step log container: bad magic at offset 0 (expected \"VTLZ\")");
    VT_FORWARD_IF_ERROR(vt_read_u16le(&r, &version, "container version"));
    VT_RETURN_ERROR_IF(version != VT_LOG_VERSION, VT_ERR_FORMAT,
                       "step log container: unsupported version %u at offset 4 (expected %u)", version,
                       VT_LOG_VERSION);
    VT_FORWARD_IF_ERROR(vt_read_u16le(&r, &flags, "container flags"));
    VT_RETURN_ERROR_IF(flags != 0, VT_ERR_FORMAT, "step log container: flags at offset 6 are 0x%04x, must be 0", flags);
    VT_FORWARD_IF_ERROR(vt_read_u64le(&r, &step, "container step"));
    VT_FORWARD_IF_ERROR(vt_read_u64le(&r, &payload_len, "payload_len"));
    VT_FORWARD_IF_ERROR(vt_read_bytes(&r, want, VT_HASH_LEN, "log hash"));
    VT_RETURN_ERROR_IF(payload_len > lim->max_decoded_bytes, VT_ERR_LIMIT,
                       "step log container: payload_len %llu at offset 16 exceeds the limit %llu", (ull)payload_len,
                       (ull)lim->max_decoded_bytes);
    VT_RETURN_ERROR_IF(payload_len > SIZE_MAX, VT_ERR_LIMIT,
                       "step log container: payload_len %llu at offset 16 does not fit in memory", (ull)payload_len);
    VT_RETURN_ERROR_IF(payload_len < VT_PAYLOAD_HEADER_LEN, VT_ERR_FORMAT,
                       "step log container: payload_len %llu at offset 16 is shorter than a payload header (%u)",
                       (ull)payload_len, VT_PAYLOAD_HEADER_LEN);

    const uint8_t *frame = buf + r.pos;
    const size_t flen = vt_reader_left(&r), foff = r.pos;
    VT_RETURN_ERROR_IF(flen < 4 || vt_get_u32le(frame) != ZSTD_MAGICNUMBER, VT_ERR_FORMAT,
                       "step log container: no zstd frame at offset %zu", foff);
    size_t fsize = ZSTD_findFrameCompressedSize(frame, flen);
    VT_RETURN_ERROR_IF(ZSTD_isError(fsize), VT_ERR_FORMAT,
                       "step log container: zstd frame at offset %zu is malformed or truncated (%zu bytes): %s", foff,
                       flen, ZSTD_getErrorName(fsize));
    VT_RETURN_ERROR_IF(fsize != flen, VT_ERR_FORMAT,
                       "step log container: %zu trailing bytes at offset %zu after the zstd frame", flen - fsize,
                       foff + fsize);
    unsigned long long csize = ZSTD_getFrameContentSize(frame, flen);
    VT_RETURN_ERROR_IF(csize == ZSTD_CONTENTSIZE_UNKNOWN, VT_ERR_FORMAT,
                       "step log container: the zstd frame at offset %zu does not declare its content size", foff);
    VT_RETURN_ERROR_IF(csize == ZSTD_CONTENTSIZE_ERROR, VT_ERR_FORMAT,
                       "step log container: bad zstd frame header at offset %zu", foff);
    VT_RETURN_ERROR_IF(csize != payload_len, VT_ERR_FORMAT,
                       "step log container: the zstd frame at offset %zu declares %llu bytes, payload_len is %llu",
                       foff, csize, (ull)payload_len);

    uint8_t *payload = malloc((size_t)payload_len);
    VT_RETURN_ERROR_IF(!payload, VT_ERR_NOMEM, "step log container: out of memory for a %llu-byte payload",
                       (ull)payload_len);
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    if (!dctx) {
        free(payload);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "step log container: out of memory for a zstd context");
    }
    size_t got_len = ZSTD_decompressDCtx(dctx, payload, (size_t)payload_len, frame, flen);
    ZSTD_freeDCtx(dctx);
    vt_err e = VT_OK;
    if (ZSTD_isError(got_len))
        e = vt_set_error(VT_ERR_FORMAT, "step log container: zstd frame at offset %zu does not decompress: %s", foff,
                         ZSTD_getErrorName(got_len));
    else if ((uint64_t)got_len != payload_len)
        e = vt_set_error(VT_ERR_FORMAT, "step log container: zstd frame at offset %zu decompresses to %zu bytes, "
                                        "payload_len is %llu", foff, got_len, (ull)payload_len);
    if (e == VT_OK) e = vt_sha256(payload, got_len, got);
    if (e == VT_OK && memcmp(got, want, VT_HASH_LEN) != 0) {
        char hw[2 * VT_HASH_LEN + 1], hg[2 * VT_HASH_LEN + 1];
        vt_hex(want, VT_HASH_LEN, hw);
        vt_hex(got, VT_HASH_LEN, hg);
        e = vt_set_error(VT_ERR_MISMATCH, "step log container: log hash mismatch: header (offset 24) says %s, payload "
                                          "hashes to %s", hw, hg);
    }
    if (e == VT_OK) {
        e = parse_inner(payload, got_len, lim, l);
        if (e != VT_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", vt_errmsg());
            vt_set_error(e, "step log container: in the payload (offsets relative to the payload): %s", msg);
        }
    }
    free(payload);
    VT_FORWARD_IF_ERROR(e);
    VT_RETURN_ERROR_IF(l->step != step, VT_ERR_FORMAT,
                       "step log container: step %llu at offset 8 differs from the payload's step %llu", (ull)step,
                       (ull)l->step);
    if (hash) memcpy(hash, got, VT_HASH_LEN);
    return VT_OK;
}

vt_err vt_steplog_decode(const uint8_t *buf, size_t len, const vt_log_limits *lim, vt_steplog *l, uint8_t hash[32])
{
    VT_RETURN_ERROR_IF(!l, VT_ERR_ARG, "vt_steplog_decode: NULL log");
    vt_err e;
    if (!buf && len) {
        e = vt_set_error(VT_ERR_ARG, "vt_steplog_decode: NULL buffer");
    } else {
        vt_log_limits L;
        resolve_limits(lim, &L);
        e = decode_inner(buf, len, &L, l, hash);
    }
    if (e != VT_OK) {
        vt_steplog_free(l);
        if (hash) memset(hash, 0, VT_HASH_LEN);
    }
    return e;
}

vt_err vt_steplog_encode_stored(const vt_steplog *l, int zstd_level, uint8_t **out, size_t *out_len, uint8_t hash[32])
{
    VT_RETURN_ERROR_IF(!l || !out || !out_len, VT_ERR_ARG, "vt_steplog_encode_stored: NULL argument");
    if (l->n_ops > 0) return vt_steplog_encode(l, zstd_level, out, out_len, hash);
    *out = NULL;
    *out_len = 0;
    uint8_t h[VT_HASH_LEN];
    VT_FORWARD_IF_ERROR(vt_steplog_hash(l, h));
    if (hash) memcpy(hash, h, VT_HASH_LEN);
    return VT_OK;
}

vt_err vt_steplog_decode_stored(const uint8_t *buf, size_t len, uint64_t step, const vt_log_limits *lim,
                                vt_steplog *l, uint8_t hash[32])
{
    VT_RETURN_ERROR_IF(!l, VT_ERR_ARG, "vt_steplog_decode_stored: NULL log");
    if (len == 0) {
        vt_steplog_reset(l, step);
        uint8_t h[VT_HASH_LEN];
        vt_err e = vt_steplog_hash(l, h);
        if (e) {
            vt_steplog_free(l);
            return e;
        }
        if (hash) memcpy(hash, h, VT_HASH_LEN);
        return VT_OK;
    }
    return vt_steplog_decode(buf, len, lim, l, hash);
}
