/* arbiter check TRANSCRIPT: re-derive a recorded game's verdict offline (game/vt_arbiter.h). */
#include <stdio.h>
#include <string.h>

#include "../common/vt_hash.h"
#include "../game/vt_arbiter.h"
#include "../merkle/vt_sign.h"
#include "arbiter.h"

int arbiter_check(int argc, char **argv)
{
    const char *pin_path = NULL, *data_root = NULL;
    vt_order order = ARBITER_ORDER;
    const vt_cli_opt opts[] = {
        VT_OPT_S("--arbiter-key", "FILE.pub", "the arbiter key you trust (without it, check the printed key)",
                 &pin_path),
        VT_OPT_S("--data-dir", "DIR", "dataset root (default: $VT_DATA_DIR or the repository's data/)", &data_root),
        VT_OPT_O("--order", "the order of the re-derivation (default reverse)", &order),
        VT_OPT_END};
    const vt_cli_cmd cmd = {
        "arbiter check", "TRANSCRIPT [--arbiter-key FILE.pub] [--data-dir DIR] [--order ORDER]",
        "re-derive the verdict of a recorded game offline (every signature re-checked), print the\n"
        "arbiter key that signed it and say what it rests on; refused when the verdict names another\n"
        "key than its signer's, when that key is not the pinned one, when it goes against the trainer\n"
        "from an arbiter its signed service record does not accept, when a record follows the verdict\n"
        "(inconsistent transcript), when its time precedes the signing time of a service record it\n"
        "relies on by more than 300 s (the arbiter's clock was behind), or when it rests on the\n"
        "trainer's unreachability after its record expired",
        "reverse (the arbiter's)", opts, NULL, 1, 1, -1,
        "exit status: 0 verdict re-derived, 1 not re-derived or refused, 2 unreadable or hostile input\n"
        "(transcript, key) or I/O error, 64 usage, 70 internal failure"};
    vt_cli_args a;
    int st = vt_cli_parse(&cmd, argc, argv, 2, &a);
    if (st >= 0) return st;
    uint8_t pin[32];
    if (pin_path && (vt_sign_init() || vt_sign_read_public_key(pin_path, pin))) {
        fprintf(stderr, "arbiter check: --arbiter-key %s: %s\n", pin_path, vt_errmsg());
        return VT_EXIT_USAGE;
    }
    vt_game_result r;
    vt_check_report rp;
    vt_err ce = vt_arbiter_check(a.v[0], data_root, order, pin_path ? pin : NULL, &r, &rp);
    if (ce) {
        fprintf(stderr, "arbiter check: %s\n", vt_errmsg());
        return vt_cli_exit_for_input(ce); /* the transcript is the input: 2; an internal failure 70 */
    }
    static const char *const who[] = {"nobody", "the trainer", "the auditor", "both parties"};
    char hex[65];
    vt_hex(rp.arbiter_pk, 32, hex);
    printf("%s: verdict against %s (%s) at step %llu, operation %u%s%s\n  %s\n",
           !rp.matches ? "MISMATCH" : rp.valid ? "RE-DERIVED" : "REFUSED", who[r.v.loser & 3],
           vt_reason_name(r.v.reason_code), (unsigned long long)r.v.step, r.v.op, r.op_name[0] ? " " : "", r.op_name,
           r.v.reason);
    printf("  arbiter key: %s (%s)\n", hex,
           pin_path ? (memcmp(pin, rp.arbiter_pk, 32) == 0 ? "the pinned key" : "NOT the pinned key")
                    : "not pinned: pass --arbiter-key FILE.pub to check it is the arbiter you trust");
    if (rp.refused[0]) printf("  refused: %s\n", rp.refused);
    printf("  trainer address: %s (its signed service record)\n  rests on: %s\n", r.endpoint[0] ? r.endpoint : "-",
           rp.rests_on);
    return rp.valid ? VT_EXIT_OK : VT_EXIT_REJECTED;
}
