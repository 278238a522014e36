/* arbiter - referees the dispute game between a trainer and an auditor (docs/dispute.md).
 *
 * Command-line code only: each subcommand parses its options through one table (cli/vt_cli_opts.h),
 * whose --help is generated from it. The subcommands' files:
 *   cmd_serve.c  arbiter serve --listen HOST:PORT --key KEYFILE [options]
 *   cmd_check.c  arbiter check TRANSCRIPT [--arbiter-key FILE.pub] [--data-dir DIR] [--order ORDER]
 *
 * Exit status: serve 0 / 2 on errors; check 0 when the recorded verdict is re-derived, 1 when
 * it is not or is refused (docs/dispute.md "Offline check"), 2 when the transcript cannot be read
 * (bytes after the verdict that are not a whole record included); 64 usage.
 */
#include "arbiter.h"

static int arbiter_keygen(int argc, char **argv) { return vt_cli_keygen("arbiter", argc, argv, 0); }

int main(int argc, char **argv)
{
    static const vt_cli_sub subs[] = {
        {"keygen", "KEYFILE [--force]: write an Ed25519 key pair (KEYFILE, mode 0600, and KEYFILE.pub)",
         arbiter_keygen, 0},
        {"serve", "--listen HOST:PORT --key KEYFILE [options]: referee challenges (default order reverse)",
         arbiter_serve, 1},
        {"check", "TRANSCRIPT [--arbiter-key FILE.pub]: re-derive a recorded verdict offline", arbiter_check, 1},
        {NULL, NULL, NULL, 0}};
    return vt_cli_main("arbiter", "referee the dispute game (default evaluation order: reverse)", subs, argc, argv);
}
