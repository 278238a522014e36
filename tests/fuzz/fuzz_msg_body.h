/* fuzz_msg_body.h - the one check shared by the libFuzzer target (fuzz_msg.c), the corpus
 * replayer (tests/tools/replay_corpus.c, "msg") and the corpus writer (make_msg_corpus.c).
 *
 * vt_fuzz_msg_one() feeds the bytes to the message decoders (protocol/vt_msg.c). Any
 * input may be rejected, but:
 *   1. as a frame without a signature check: a rejection is VT_ERR_FORMAT, VT_ERR_LIMIT or
 *      VT_ERR_NOMEM and leaves the message empty; an accepted frame's body re-encodes to
 *      exactly the body bytes, and its header fields are the bytes';
 *   2. as a frame signed by the fixed key (vt_fuzz_msg_key): acceptance implies 1 accepted,
 *      and re-encoding the message with that key and its seq reproduces the input byte for
 *      byte (Ed25519 is deterministic); a frame accepted by 1 and rejected here is
 *      VT_ERR_CRYPTO (and only then);
 *   3. as the body of every type: a decoded body re-encodes to exactly the input;
 *   4. the bytes after the first, wrapped as the body of a frame of type
 *      (first byte % number of types) + 1, correctly signed by the fixed key (this drives
 *      mutations through the signature path): the frame decodes exactly when the header
 *      bounds and the body decoder accept, to the same body.
 * Returns 0 when every rule holds, 1 on a violation (described on stderr).
 * *accepted gets bit 0 when 1 accepted, bit 1 when 2 accepted. */
#ifndef VT_FUZZ_MSG_BODY_H
#define VT_FUZZ_MSG_BODY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vt_bytes.h"
#include "merkle/vt_sign.h"
#include "protocol/vt_proto.h"

/* Small limits keep every input cheap (the protocol allows 256 MiB bodies). */
static vt_msg_limits vt_fuzz_msg_limits(void)
{
    vt_msg_limits l;
    memset(&l, 0, sizeof l);
    l.max_body[VT_MSG_INPUTS] = 1u << 20;
    l.max_body[VT_MSG_LOG] = 1u << 20;
    return l;
}

/* The fixed key: seed = 32 x 0x5a. */
static const vt_keypair *vt_fuzz_msg_key(void)
{
    static vt_keypair kp;
    static int ready;
    if (!ready) {
        uint8_t seed[VT_SIGN_SEED_LEN];
        memset(seed, 0x5a, sizeof seed);
        if (vt_sign_seed_keypair(&kp, seed) != VT_OK) {
            fprintf(stderr, "fuzz_msg: cannot derive the fixed key: %s\n", vt_errmsg());
            abort();
        }
        ready = 1;
    }
    return &kp;
}

#define VT_FUZZ_MSG_FAIL(...)                              \
    do {                                                   \
        fprintf(stderr, "fuzz_msg violation: ");           \
        fprintf(stderr, __VA_ARGS__);                      \
        fputc('\n', stderr);                               \
        rc = 1;                                            \
        goto done;                                         \
    } while (0)

static int vt_fuzz_msg_empty(const vt_msg *m)
{
    static const vt_msg zero;
    return memcmp(m, &zero, sizeof zero) == 0;
}

static int vt_fuzz_msg_one(const uint8_t *data, size_t size, int *accepted)
{
    int rc = 0;
    const vt_keypair *kp = vt_fuzz_msg_key();
    vt_msg_limits lim = vt_fuzz_msg_limits();
    vt_msg m, m2, m4;
    vt_msg_body b;
    vt_buf enc, frame;
    memset(&m, 0, sizeof m);
    memset(&m2, 0, sizeof m2);
    memset(&m4, 0, sizeof m4);
    memset(&b, 0, sizeof b);
    vt_buf_init(&enc);
    vt_buf_init(&frame);
    int btype = 0;
    *accepted = 0;

    /* 1. unsigned frame */
    vt_err e1 = vt_msg_decode(data, size, NULL, &lim, &m);
    if (e1 == VT_OK) {
        *accepted |= 1;
        if (m.hdr.version != VT_MSG_VERSION || m.hdr.type != vt_get_u16le(data + 6) ||
            m.hdr.seq != vt_get_u32le(data + 8) || m.hdr.body_len != vt_get_u32le(data + 12) ||
            size != (size_t)VT_MSG_OVERHEAD + m.hdr.body_len || m.sig_verified != 0)
            VT_FUZZ_MSG_FAIL("1: header fields differ from the bytes");
        if (vt_msg_body_encode(m.hdr.type, &m.body, &enc) != VT_OK)
            VT_FUZZ_MSG_FAIL("1: accepted %s body does not re-encode: %s", vt_msg_type_name(m.hdr.type), vt_errmsg());
        if (enc.len != m.hdr.body_len || memcmp(enc.data, data + VT_MSG_HEADER_LEN, enc.len) != 0)
            VT_FUZZ_MSG_FAIL("1: %s body re-encodes differently (%zu vs %u bytes)", vt_msg_type_name(m.hdr.type),
                             enc.len, (unsigned)m.hdr.body_len);
        if (memcmp(m.sig, data + VT_MSG_HEADER_LEN + m.hdr.body_len, VT_MSG_SIG_LEN) != 0)
            VT_FUZZ_MSG_FAIL("1: signature bytes differ");
    } else {
        if (e1 != VT_ERR_FORMAT && e1 != VT_ERR_LIMIT && e1 != VT_ERR_NOMEM)
            VT_FUZZ_MSG_FAIL("1: rejection with unexpected code %d (%s)", (int)e1, vt_errmsg());
        if (!vt_fuzz_msg_empty(&m)) VT_FUZZ_MSG_FAIL("1: rejected message not left empty");
    }

    /* 2. frame signed by the fixed key */
    vt_err e2 = vt_msg_decode(data, size, kp->pk, &lim, &m2);
    if (e2 == VT_OK) {
        *accepted |= 2;
        if (e1 != VT_OK) VT_FUZZ_MSG_FAIL("2: accepted with the key, rejected without");
        if (!m2.sig_verified) VT_FUZZ_MSG_FAIL("2: sig_verified not set");
        enc.len = 0;
        if (vt_msg_encode(m2.hdr.type, &m2.body, m2.hdr.seq, kp, &enc) != VT_OK)
            VT_FUZZ_MSG_FAIL("2: accepted message does not re-encode: %s", vt_errmsg());
        if (enc.len != size || memcmp(enc.data, data, size) != 0)
            VT_FUZZ_MSG_FAIL("2: re-encoded frame differs from the input");
    } else {
        if (e2 != VT_ERR_FORMAT && e2 != VT_ERR_LIMIT && e2 != VT_ERR_NOMEM && e2 != VT_ERR_CRYPTO)
            VT_FUZZ_MSG_FAIL("2: rejection with unexpected code %d (%s)", (int)e2, vt_errmsg());
        if (e1 == VT_OK && e2 != VT_ERR_CRYPTO)
            VT_FUZZ_MSG_FAIL("2: frame accepted unsigned, rejected signed with code %d", (int)e2);
        if (e1 != VT_OK && e2 == VT_ERR_CRYPTO && size >= VT_MSG_HEADER_LEN) {
            /* the signature is only checked on a well-formed header and length */
            vt_msg_header h;
            if (vt_msg_parse_header(data, &lim, &h) != VT_OK || size != (size_t)VT_MSG_OVERHEAD + h.body_len)
                VT_FUZZ_MSG_FAIL("2: signature checked before the header and length");
        }
        if (!vt_fuzz_msg_empty(&m2)) VT_FUZZ_MSG_FAIL("2: rejected message not left empty");
    }

    /* 3. the bytes as a body of every type */
    for (int t = 1; t < VT_MSG_TYPE_COUNT_; t++) {
        vt_err e = vt_msg_body_decode(t, data, size, &b);
        btype = t;
        if (e == VT_OK) {
            enc.len = 0;
            if (vt_msg_body_encode(t, &b, &enc) != VT_OK)
                VT_FUZZ_MSG_FAIL("3: accepted %s body does not re-encode: %s", vt_msg_type_name(t), vt_errmsg());
            if (enc.len != size || (size && memcmp(enc.data, data, size) != 0))
                VT_FUZZ_MSG_FAIL("3: %s body re-encodes differently", vt_msg_type_name(t));
        } else if (e != VT_ERR_FORMAT && e != VT_ERR_LIMIT && e != VT_ERR_NOMEM) {
            VT_FUZZ_MSG_FAIL("3: %s body rejected with unexpected code %d (%s)", vt_msg_type_name(t), (int)e,
                             vt_errmsg());
        }
        vt_msg_body_free(t, &b);
        btype = 0;
    }

    /* 4. a correctly signed frame around data[1..] */
    if (size >= 1 && size - 1 <= UINT32_MAX - VT_MSG_OVERHEAD) {
        int t = data[0] % (VT_MSG_TYPE_COUNT_ - 1) + 1;
        size_t blen = size - 1;
        uint8_t hdr[VT_MSG_HEADER_LEN];
        memcpy(hdr, VT_MSG_MAGIC, 4);
        vt_put_u16le(hdr + 4, (uint16_t)VT_MSG_VERSION);
        vt_put_u16le(hdr + 6, (uint16_t)t);
        vt_put_u32le(hdr + 8, 7);
        vt_put_u32le(hdr + 12, (uint32_t)blen);
        uint8_t sig[VT_MSG_SIG_LEN];
        if (vt_buf_append(&frame, hdr, sizeof hdr) != VT_OK || vt_buf_append(&frame, data + 1, blen) != VT_OK ||
            vt_sign_detached(kp, frame.data, frame.len, sig) != VT_OK || vt_buf_append(&frame, sig, sizeof sig) != VT_OK)
            VT_FUZZ_MSG_FAIL("4: cannot build the frame: %s", vt_errmsg());
        vt_err e4 = vt_msg_decode(frame.data, frame.len, kp->pk, &lim, &m4);
        int header_ok = blen <= vt_msg_max_body(t, &lim);
        vt_err eb = vt_msg_body_decode(t, data + 1, blen, &b);
        btype = t;
        int want = header_ok && eb == VT_OK;
        if ((e4 == VT_OK) != want)
            VT_FUZZ_MSG_FAIL("4: signed %s frame %s but the body decoder %s (limit %s)", vt_msg_type_name(t),
                             e4 == VT_OK ? "accepted" : "rejected", eb == VT_OK ? "accepts" : "rejects",
                             header_ok ? "ok" : "exceeded");
        if (e4 == VT_OK) {
            enc.len = 0;
            if (vt_msg_body_encode(t, &m4.body, &enc) != VT_OK || enc.len != blen ||
                (blen && memcmp(enc.data, data + 1, blen) != 0))
                VT_FUZZ_MSG_FAIL("4: %s body of the signed frame re-encodes differently", vt_msg_type_name(t));
            if (m4.hdr.seq != 7 || !m4.sig_verified) VT_FUZZ_MSG_FAIL("4: header fields wrong");
        } else if (e4 == VT_ERR_CRYPTO) {
            VT_FUZZ_MSG_FAIL("4: a correctly signed frame failed the signature check");
        }
    }

    /* 5. the bytes as a service record (the CHALLENGE carries one, opaque to the codec) */
    {
        vt_service sv;
        vt_err e5 = vt_service_parse(data, size, &sv);
        if (e5 != VT_OK && e5 != VT_ERR_FORMAT && e5 != VT_ERR_CRYPTO)
            VT_FUZZ_MSG_FAIL("5: service record rejected with unexpected code %d (%s)", (int)e5, vt_errmsg());
        if (e5 == VT_OK && (vt_service_check_addr(sv.addr) != VT_OK || sv.n_arbiters < 1 ||
                            sv.n_arbiters > VT_SERVICE_MAX_ARBITERS ||
                            size != VT_SERVICE_BASE_LEN + 32u * sv.n_arbiters + strlen(sv.addr)))
            VT_FUZZ_MSG_FAIL("5: an accepted service record with a bad address, arbiter count or length");
        if (e5 == VT_OK && memcmp(sv.trainer_pk, kp->pk, 32) == 0) { /* ours: it re-signs to the same bytes */
            uint8_t again[VT_SERVICE_MAX_LEN];
            size_t n5 = 0;
            if (vt_service_sign(&sv, kp, again, sizeof again, &n5) != VT_OK || n5 != size || memcmp(again, data, size) != 0)
                VT_FUZZ_MSG_FAIL("5: an accepted service record does not re-sign to the same bytes");
        }
    }

done:
    if (btype) vt_msg_body_free(btype, &b);
    vt_msg_free(&m);
    vt_msg_free(&m2);
    vt_msg_free(&m4);
    vt_buf_free(&enc);
    vt_buf_free(&frame);
    return rc;
}

#endif
