/* vt_cert_resign - test tool for the one-pass check (tests/cert*.sh): a certificate whose body a
 * test altered, signed again with the auditor's key, so that check-certificate must reject it for
 * its contents, not its signature:
 *   vt_cert_resign CERT KEYFILE     (the body: everything before the last 96 bytes; rewritten in place)
 * Not part of the product. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cert/vt_cert_int.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: vt_cert_resign CERT KEYFILE\n");
        return 64;
    }
    uint8_t *p = NULL;
    size_t n = 0;
    vt_keypair kp;
    memset(&kp, 0, sizeof kp);
    vt_err e = vti_cert_read_file(argv[1], (size_t)1 << 30, &p, &n);
    if (!e && n < 96) e = vt_set_error(VT_ERR_FORMAT, "%s: shorter than a signature", argv[1]);
    if (!e) e = vt_sign_read_secret_key(argv[2], &kp);
    vti_buf out = {p, n - 96, n, 0};
    if (!e) e = vti_cert_sign_write(&out, &kp, argv[1]);
    vt_keypair_wipe(&kp);
    if (e) fprintf(stderr, "vt_cert_resign: %s\n", vt_errmsg());
    free(out.b);
    return e ? 1 : 0;
}
