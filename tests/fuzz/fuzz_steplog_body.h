/* fuzz_steplog_body.h - the one check shared by the libFuzzer target (fuzz_steplog.c)
 * and the corpus replayer (tests/tools/replay_corpus.c).
 *
 * vt_fuzz_steplog_one() feeds the bytes to vt_steplog_decode (as a container) and to
 * vt_steplog_parse (as a payload). A decoder may reject anything, but:
 *   - a rejection must leave the log empty and freed, with a known error code;
 *   - an accepted payload must re-serialise to exactly the input bytes (canonical);
 *   - an accepted container must re-serialise to a payload whose SHA-256 is the
 *     reported hash and the header's hash, of the header's length and step, and
 *     re-encoding + decoding must give the same payload again;
 *   - the bytes wrapped as the payload of a well-formed container (correct length,
 *     hash and step) must decode exactly when they parse, with the same error code
 *     or the same log (this drives the fuzzer's mutations through the container path).
 * Returns 0 when every rule holds, 1 on a violation (described on stderr).
 * *accepted gets bit 0 when decode accepted, bit 1 when parse accepted. */
#ifndef VT_FUZZ_STEPLOG_BODY_H
#define VT_FUZZ_STEPLOG_BODY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/vt_bytes.h"
#include "common/vt_hash.h"
#include "rounding_log/vt_rlog.h"

/* Small limits keep every input cheap (the defaults allow 256 MiB payloads). */
static const vt_log_limits vt_fuzz_limits = {
    .max_decoded_bytes = (uint64_t)4 << 20,
    .max_ops = 4096,
    .max_entries = (uint64_t)1 << 20,
    .max_elems = 0, /* default 2^40 */
};

#define VT_FUZZ_FAIL(...)                                  \
    do {                                                   \
        fprintf(stderr, "fuzz_steplog violation: ");       \
        fprintf(stderr, __VA_ARGS__);                      \
        fputc('\n', stderr);                               \
        rc = 1;                                            \
        goto done;                                         \
    } while (0)

static int vt_fuzz_rejection_ok(vt_err e, const vt_steplog *l)
{
    if (e != VT_ERR_FORMAT && e != VT_ERR_LIMIT && e != VT_ERR_MISMATCH && e != VT_ERR_NOMEM) return 0;
    return l->n_ops == 0 && l->ops == NULL && l->cap_ops == 0;
}

static int vt_fuzz_steplog_one(const uint8_t *data, size_t size, int *accepted)
{
    int rc = 0;
    vt_steplog l, l2;
    uint8_t *p = NULL, *c = NULL, *p2 = NULL;
    size_t n = 0, cn = 0, n2 = 0;
    uint8_t h[32], h2[32];
    vt_err e;
    *accepted = 0;
    vt_steplog_init(&l, 0);
    vt_steplog_init(&l2, 0);

    /* 1. As a container. */
    e = vt_steplog_decode(data, size, &vt_fuzz_limits, &l, h);
    if (e == VT_OK) {
        *accepted |= 1;
        if (size < 56) VT_FUZZ_FAIL("decode accepted %zu bytes, shorter than a container header", size);
        if (vt_steplog_serialize(&l, &p, &n) != VT_OK) VT_FUZZ_FAIL("re-serialise failed: %s", vt_errmsg());
        if (vt_sha256(p, n, h2) != VT_OK) VT_FUZZ_FAIL("sha256 failed");
        if (memcmp(h, h2, 32) != 0) VT_FUZZ_FAIL("decode: reported hash differs from the re-serialised payload's");
        if (memcmp(h, data + 24, 32) != 0) VT_FUZZ_FAIL("decode: reported hash differs from the header's");
        if (vt_get_u64le(data + 16) != (uint64_t)n) VT_FUZZ_FAIL("decode: payload_len differs from re-serialised");
        if (vt_get_u64le(data + 8) != l.step) VT_FUZZ_FAIL("decode: header step differs from the log's");
        if (vt_steplog_encode(&l, 1, &c, &cn, h2) != VT_OK) VT_FUZZ_FAIL("re-encode failed: %s", vt_errmsg());
        if (memcmp(h, h2, 32) != 0) VT_FUZZ_FAIL("encode: hash differs");
        if (vt_steplog_decode(c, cn, &vt_fuzz_limits, &l2, h2) != VT_OK)
            VT_FUZZ_FAIL("re-encoded container does not decode: %s", vt_errmsg());
        if (vt_steplog_serialize(&l2, &p2, &n2) != VT_OK) VT_FUZZ_FAIL("re-serialise 2 failed: %s", vt_errmsg());
        if (n2 != n || memcmp(p, p2, n) != 0) VT_FUZZ_FAIL("decode(encode(log)) differs from log");
        free(p);
        free(c);
        free(p2);
        p = c = p2 = NULL;
    } else if (!vt_fuzz_rejection_ok(e, &l)) {
        VT_FUZZ_FAIL("decode rejected with code %d (%s) but left the log non-empty or used an unexpected code", (int)e,
                     vt_errmsg());
    }

    /* 2. As a payload (into the same log object: exercises reuse of a decoded log). */
    e = vt_steplog_parse(data, size, &vt_fuzz_limits, &l);
    if (e == VT_OK) {
        *accepted |= 2;
        if (vt_steplog_serialize(&l, &p, &n) != VT_OK) VT_FUZZ_FAIL("re-serialise failed: %s", vt_errmsg());
        if (n != size || memcmp(p, data, n) != 0)
            VT_FUZZ_FAIL("parse accepted a non-canonical payload (%zu bytes re-serialise to %zu different bytes)", size,
                         n);
        if (vt_steplog_hash(&l, h) != VT_OK || vt_sha256(data, size, h2) != VT_OK || memcmp(h, h2, 32) != 0)
            VT_FUZZ_FAIL("vt_steplog_hash differs from SHA-256 of the payload");
    } else if (!vt_fuzz_rejection_ok(e, &l)) {
        VT_FUZZ_FAIL("parse rejected with code %d (%s) but left the log non-empty or used an unexpected code", (int)e,
                     vt_errmsg());
    }

    /* 3. The same bytes as the payload of a well-formed container (only when they start
     * like a payload: anything else fails at the magic either way). */
    if (size >= 4 && memcmp(data, "VTLP", 4) == 0 && size <= vt_fuzz_limits.max_decoded_bytes) {
        vt_err e_parse = e;
        size_t bound = ZSTD_compressBound(size);
        c = malloc(56 + bound);
        if (!c) VT_FUZZ_FAIL("out of memory");
        memcpy(c, "VTLZ\x01\x00\x00\x00", 8);
        vt_put_u64le(c + 8, size >= 16 ? vt_get_u64le(data + 8) : 0);
        vt_put_u64le(c + 16, (uint64_t)size);
        if (vt_sha256(data, size, c + 24) != VT_OK) VT_FUZZ_FAIL("sha256 failed");
        static ZSTD_CCtx *cctx; /* kept for the whole run: creating one per input is slow */
        if (!cctx && !(cctx = ZSTD_createCCtx())) VT_FUZZ_FAIL("out of memory");
        size_t z = ZSTD_compressCCtx(cctx, c + 56, bound, data, size, 1);
        if (ZSTD_isError(z)) VT_FUZZ_FAIL("zstd: %s", ZSTD_getErrorName(z));
        e = vt_steplog_decode(c, 56 + z, &vt_fuzz_limits, &l2, h);
        if (e != e_parse) VT_FUZZ_FAIL("wrapped payload: decode returned %d, parse %d (%s)", (int)e, (int)e_parse,
                                       vt_errmsg());
        if (e == VT_OK) {
            if (vt_steplog_serialize(&l2, &p2, &n2) != VT_OK) VT_FUZZ_FAIL("re-serialise 3 failed");
            if (n2 != size || memcmp(p2, data, size) != 0) VT_FUZZ_FAIL("wrapped payload decodes to another log");
            if (memcmp(h, c + 24, 32) != 0) VT_FUZZ_FAIL("wrapped payload: hash differs");
        } else if (!vt_fuzz_rejection_ok(e, &l2)) {
            VT_FUZZ_FAIL("wrapped payload rejected with code %d but the log is not empty", (int)e);
        }
    }

done:
    free(p);
    free(c);
    free(p2);
    vt_steplog_free(&l);
    vt_steplog_free(&l2);
    return rc;
}

#endif
