/* fuzz_cert_body.h - the check of the certificate decoders (docs/format.md "Certificate";
 * cert/vt_cert_int.h vti_cert_parse_run, vti_cert_parse_spec), shared by the libFuzzer target
 * fuzz_cert (tests/fuzz/fuzz_target.c) and the corpus replayer (tests/tools/replay_corpus.c: ctest
 * cert_corpus over tests/corpus/cert).
 *
 * The bytes go to the three decoders: a committed run's (versions 1, 4 and 5), the ONNX / VNN-LIB one's
 * (versions 2, 6 and 8: its branch and bound, with input splits) and the committed run's VNN-LIB one's
 * (versions 3, 7 and 9). Decoding only: no signature needs to
 * verify. Any input may be refused, but only as VT_ERR_FORMAT; at most one decoder accepts, the one of
 * the version at offset 8; what is accepted is consistent: the magic, the header's fields in range
 * (slopes only with alpha-CROWN), the body everything but the last 96 bytes (the signer's key and
 * signature), and the length exact (the same bytes one byte shorter, or one byte longer, are refused
 * by the same decoder). The signature check on an accepted file answers VT_OK or VT_ERR_MISMATCH.
 * Returns 0 when every rule holds, 1 on a violation (described on stderr); *accepted gets bit 0 for
 * the run's decoder, bit 1 for version 2's, bit 2 for version 3's. */
#ifndef VT_FUZZ_CERT_BODY_H
#define VT_FUZZ_CERT_BODY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cert/vt_cert_int.h"
#include "common/vt_bytes.h"
#include "fuzz/fuzz_common.h"

#define VT_FUZZ_CERT_FAIL(...) VT_FUZZ_VIOLATION("fuzz_cert", __VA_ARGS__)

/* decoder k (0: run, 1: version 2, 2: version 3) on p[0..n) */
static vt_err vt_fuzz_cert_parse(int k, const uint8_t *p, size_t n, vt_cert_opts *o, size_t *body)
{
    uint8_t sh[32];
    memset(o, 0, sizeof *o);
    return k == 0 ? vti_cert_parse_run(p, n, o, sh, body) : vti_cert_parse_spec(p, n, k == 2, &o->set, body);
}

static int vt_fuzz_cert_one(const uint8_t *data, size_t size, int *accepted)
{
    static const uint32_t header[3] = {244, 140, 140}; /* docs/format.md "Certificate" */
    int rc = 0;
    uint8_t *b = malloc(size + 1);
    *accepted = 0;
    if (!b) return 0; /* out of memory: nothing to check */
    memcpy(b, data, size);
    b[size] = 0;
    for (int k = 0; k < 3; k++) {
        vt_cert_opts o;
        size_t body = 0;
        vt_err e = vt_fuzz_cert_parse(k, data, size, &o, &body);
        if (e) {
            if (e != VT_ERR_FORMAT) VT_FUZZ_CERT_FAIL("decoder %d: refused with code %d (%s)", k, (int)e, vt_errmsg());
            continue;
        }
        *accepted |= 1 << k;
        uint32_t ver = vt_get_u32le(data + 8);
        if (size < header[k] + 96 || memcmp(data, "VTCERT01", 8) != 0)
            VT_FUZZ_CERT_FAIL("decoder %d: accepted %zu bytes without the magic or the header", k, size);
        if (k == 0 ? ver != 1 && ver != 4 && ver != 5
                   : ver != (uint32_t)k + 1 && ver != (uint32_t)k + 5 && ver != (uint32_t)k + 7)
            VT_FUZZ_CERT_FAIL("decoder %d: accepted version %u", k, ver);
        if (body != size - 96) VT_FUZZ_CERT_FAIL("decoder %d: body of %zu bytes in %zu", k, body, size);
        if (o.set.method > VT_CERT_ALPHA_CROWN || o.set.alpha_iters > 100000 || o.set.attack_restarts > 100000 ||
            o.set.attack_iters > 100000)
            VT_FUZZ_CERT_FAIL("decoder %d: settings out of range", k);
        if (vt_get_u32le(data + (k == 0 ? 28 : 32)) && o.set.method != VT_CERT_ALPHA_CROWN)
            VT_FUZZ_CERT_FAIL("decoder %d: slopes recorded without alpha-CROWN", k);
        if (k == 0 && (o.examples < 1 || o.examples != vt_get_u32le(data + 16)))
            VT_FUZZ_CERT_FAIL("decoder 0: %u examples, the header gives %u", o.examples, vt_get_u32le(data + 16));
        if (vt_fuzz_cert_parse(k, b, size - 1, &o, &body) == VT_OK)
            VT_FUZZ_CERT_FAIL("decoder %d: accepts the file one byte shorter", k);
        if (vt_fuzz_cert_parse(k, b, size + 1, &o, &body) == VT_OK)
            VT_FUZZ_CERT_FAIL("decoder %d: accepts the file one byte longer", k);
        e = vti_cert_verify("fuzz", data, size - 96, NULL);
        if (e != VT_OK && e != VT_ERR_MISMATCH)
            VT_FUZZ_CERT_FAIL("decoder %d: the signature check answers code %d (%s)", k, (int)e, vt_errmsg());
    }
    if (*accepted & (*accepted - 1)) VT_FUZZ_CERT_FAIL("accepted by more than one decoder (%d)", *accepted);
done:
    free(b);
    return rc;
}

#endif
