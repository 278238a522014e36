/* vt_record - test tool: re-signs a trainer's service record with other times, as a trainer holding
 * its key could (docs/dispute.md "Fresh service records"). Not part of the product.
 *   vt_record KEYFILE IN OUT SIGNED_AT EXPIRY
 * SIGNED_AT and EXPIRY are seconds relative to now (e.g. -1000 and -10: a record signed 1000 s ago
 * that expired 10 s ago); the serial becomes the signing time in microseconds. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "merkle/vt_sign.h"
#include "protocol/vt_proto.h"

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: vt_record KEYFILE IN OUT SIGNED_AT EXPIRY (seconds relative to now)\n");
        return 64;
    }
    vt_keypair kp;
    uint8_t in[VT_SERVICE_MAX_LEN], out[VT_SERVICE_MAX_LEN];
    size_t n = 0, m = 0;
    vt_service s;
    long long at = atoll(argv[4]), ex = atoll(argv[5]), now = (long long)time(NULL);
    vt_err e = vt_sign_init();
    if (!e) e = vt_sign_read_secret_key(argv[1], &kp);
    if (!e) e = vt_service_read_file(argv[2], in, sizeof in, &n);
    if (!e) e = vt_service_parse(in, n, &s);
    if (!e) {
        s.serial = (uint64_t)(now + at) * 1000000u;
        s.expiry = (uint64_t)(now + ex);
        e = vt_service_sign(&s, &kp, out, sizeof out, &m);
    }
    if (!e) {
        FILE *f = fopen(argv[3], "wb");
        e = f && fwrite(out, 1, m, f) == m ? VT_OK : vt_set_error(VT_ERR_IO, "cannot write %s", argv[3]);
        if (f && fclose(f)) e = vt_set_error(VT_ERR_IO, "cannot write %s", argv[3]);
    }
    if (e) {
        fprintf(stderr, "vt_record: %s\n", vt_errmsg());
        return 1;
    }
    printf("signed at %lld, expires %lld\n", now + at, now + ex);
    return 0;
}
