/* auditor - replays a committed training run on its own evaluation order and checks it; plays the
 * dispute game; certifies robustness (docs/architecture.md).
 *
 * Command-line code only: each subcommand parses its options through one table (cli/vt_cli_opts.h),
 * whose --help is generated from it. The subcommands' files:
 *   cmd_verify.c     auditor verify RUN_DIR [options]
 *   cmd_challenge.c  auditor challenge RUN_DIR --arbiter HOST:PORT --arbiter-key FILE.pub --key KEYFILE
 *   cmd_certify.c    auditor certify RUN_DIR ..., auditor check-certificate CERT RUN_DIR ...
 *   test_hooks.c     the test build's options (auditor-test)
 *
 * Exit status: 0 verified, 1 rejected, 2 cannot check (unreadable/corrupt input), 64 usage.
 */
#include "auditor.h"

static int auditor_keygen(int argc, char **argv) { return vt_cli_keygen("auditor", argc, argv, 0); }

int main(int argc, char **argv)
{
    static const vt_cli_sub subs[] = {
        {"verify", "RUN_DIR [options]: replay a committed run in the auditor's order and give the verdict\n"
                   "(default order split)", auditor_verify, 1},
        {"challenge", "RUN_DIR --arbiter HOST:PORT --arbiter-key FILE.pub --key KEYFILE: play the dispute\n"
                      "game after a rejected verify (default order pairwise)", auditor_challenge, 1},
        {"certify", "RUN_DIR --eps E --examples N [options]: robustness certificates (docs/certify.md)",
         auditor_certify, 1},
        {"check-certificate", "CERT RUN_DIR [options]: recompute a certificate and compare its bytes",
         auditor_check_certificate, 1},
        {"keygen", "KEYFILE [--force]: write an Ed25519 key pair (KEYFILE, mode 0600, and KEYFILE.pub)",
         auditor_keygen, 0},
        {NULL, NULL, NULL, 0}};
    return vt_cli_main("auditor", "check a committed training run by replaying it (default evaluation order: split)",
                       subs, argc, argv);
}
