/* arbiter - referees the dispute game between a trainer and an auditor (docs/dispute.md).
 *
 *   arbiter keygen KEYFILE [--force]
 *   arbiter serve --listen ADDR --key KEYFILE [--data-dir DIR] [--order ORDER] [--transcripts DIR]
 *                 [--deadline-ms N] [--clock-ms N] [--games N] [limits...] [--tc-factor MODE=X]...
 *                 [--no-calibrate] [--port-file FILE] [--quiet]
 *   arbiter check TRANSCRIPT [--arbiter-key FILE.pub] [--data-dir DIR] [--order ORDER]
 *
 * Exit status: serve 0 / 2 on errors; check 0 when the recorded verdict is re-derived, 1 when
 * it is not or is refused (docs/dispute.md "Offline check"), 2 when the transcript cannot be read
 * (bytes after the verdict that are not a whole record included); 64 usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/vt_cli_opts.h"
#include "../common/vt_cli.h"
#include "../common/vt_par.h"
#include "../common/vt_env.h"
#include "../common/vt_hash.h"
#include "../game/vt_arbiter.h"
#include "../merkle/vt_sign.h"

static void usage(FILE *f)
{
    fprintf(f, "usage:\n"
               "  arbiter keygen KEYFILE [--force]\n"
               "  arbiter serve --listen HOST:PORT --key KEYFILE [options]\n"
               "      referee challenges: bisection over steps, then over the operations of the disputed\n"
               "      step, then recompute ONE operation and sign a verdict (sent to both parties)\n"
               "      --data-dir DIR        dataset root (default: $VT_DATA_DIR or the repository's data/)\n"
               "      --order ORDER         the arbiter's own evaluation order (default reverse)\n"
               "      --transcripts DIR     one transcript per game (default: the working directory)\n"
               "      --deadline-ms N       a party's deadline per answer (default 30000)\n"
               "      --clock-ms N          each party's clock for a whole game: every wait for it, retries\n"
               "                            to reach it included, is charged to it (default 300000)\n"
               "      --min-mflops N        the rate floor: a question that makes the trainer recompute K steps\n"
               "                            adds K x (the step's flop / N Mflop/s) to its deadline, and once\n"
               "                            per computation to its clock (default 200, at most 65535)\n"
               "      --max-work-s N        refuse a game whose recomputation could be granted more than N s\n"
               "                            in all at the rate floor, in FP64-equivalent work (tensor-core\n"
               "                            GEMMs unweighed; default 7200; docs/dispute.md)\n"
               "      --tc-factor MODE=X    a tensor-core mode's GEMM flop weighs X (>= 1) FP64 GEMM flop in\n"
               "                            the grant (repeatable; e.g. tc-fp16-sm80=60); without it each tc-*\n"
               "                            mode's weight is calibrated at start-up: the portable emulator's cost\n"
               "                            per flop over the FP64 GEMM path's (about 0.2 s)\n"
               "      --no-calibrate        the weights not set by --tc-factor are the documented defaults\n"
               "                            (50 for the sm80 modes, 40 for the others; docs/dispute.md \"Clocks\")\n"
               "      --heartbeat-ms N      while the trainer computes, a note to the auditor this often, so\n"
               "                            that it knows the game goes on (default 20000)\n"
               "      --games N             stop after N games (default: serve forever)\n"
               "      --max-running N       games played at once (default 4)\n"
               "      --games-per-ip N      of those, challenged from one IP address (default 2)\n"
               "      --games-per-commitment N  of those, about one run's commitment (default 2); one game\n"
               "                            per auditor key at a time\n"
               "      --max-game-mb N       memory a game may need, computed from its manifest (default 512)\n"
               "      --max-op-mflop N      the largest operation it may recompute, Mflop (default 20000)\n"
               "      --challenge-ms N      a client's CHALLENGE must follow its handshake this soon (default 5000)\n"
               "      --handshake-ms N      TLS handshake deadline (default 3000)\n"
               "      --max-pending N       connections not yet authenticated (default 64)\n"
               "      --pending-per-ip N    of those, from one IP address (default 16)\n"
               "      --port-file FILE      write the bound port here once listening\n"
               "      --quiet               no progress lines (rejections are still logged)\n"
               "  arbiter check TRANSCRIPT [--arbiter-key FILE.pub] [--data-dir DIR] [--order ORDER]\n"
               "      re-derive the verdict of a recorded game offline (every signature re-checked), print the\n"
               "      arbiter key that signed it and say what it rests on; refused when the verdict names\n"
               "      another key than its signer's, when that key is not the pinned one, when it goes\n"
               "      against the trainer from an arbiter its signed service record does not accept, when a\n"
               "      record follows the verdict (inconsistent transcript), when its time precedes the signing\n"
               "      time of a service record it relies on by more than 300 s (the arbiter's clock was\n"
               "      behind), or when it rests on the trainer's unreachability after its record expired\n"
               "      --arbiter-key FILE.pub  the arbiter key you trust (without it, check the printed key)\n"
               "exit status: 0 ok / verdict re-derived, 1 verdict not re-derived or refused, 2 unreadable or\n"
               "hostile input (transcript, key) or I/O error, 64 usage, 70 internal failure\n");
}

static int main_dispatch(int argc, char **argv)
{
    if (argc < 2) return vt_cli_usage_error(usage, NULL);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return VT_EXIT_OK;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "keygen") == 0) return vt_cli_keygen("arbiter", argc, argv, usage, 0);
    /* the floating-point environment, e.g. FTZ set by a -ffast-math CBLAS at load: refused, exit 2 */
    if (vt_env_cli_check("arbiter")) return VT_EXIT_CANNOT;
    static const struct option lo[] = {{"listen", required_argument, 0, 'l'},   {"key", required_argument, 0, 'k'},
                                       {"data-dir", required_argument, 0, 'd'}, {"order", required_argument, 0, 'o'},
                                       {"transcripts", required_argument, 0, 't'},
                                       {"deadline-ms", required_argument, 0, 'D'}, {"games", required_argument, 0, 'g'},
                                       {"clock-ms", required_argument, 0, 'C'}, {"max-running", required_argument, 0, 'R'},
                                       {"games-per-ip", required_argument, 0, 'I'},
                                       {"games-per-commitment", required_argument, 0, 'G'},
                                       {"max-game-mb", required_argument, 0, 'M'},
                                       {"max-op-mflop", required_argument, 0, 'F'},
                                       {"min-mflops", required_argument, 0, 'm'},
                                       {"max-work-s", required_argument, 0, 'w'},
                                       {"heartbeat-ms", required_argument, 0, 'B'},
                                       {"tc-factor", required_argument, 0, 'T'}, {"no-calibrate", no_argument, 0, 'N'},
                                       {"challenge-ms", required_argument, 0, 'c'},
                                       {"handshake-ms", required_argument, 0, 'H'},
                                       {"max-pending", required_argument, 0, 'P'},
                                       {"pending-per-ip", required_argument, 0, 'J'},
                                       {"port-file", required_argument, 0, 'p'}, {"quiet", no_argument, 0, 'q'},
                                       {"arbiter-key", required_argument, 0, 'K'},
                                       {0, 0, 0, 0}};
    vt_arbiter_opts o;
    memset(&o, 0, sizeof o);
    const char *pin_path = NULL; /* check: the arbiter key the caller trusts */
    double tc_factor[VT_GAME_ARITH_MAX] = {0};
    int serve_only = 0; /* --tc-factor, --no-calibrate: options of serve */
    o.order = VT_ORDER_REVERSE;
    o.deadline_ms = 30000;
    o.clock_ms = 300000;
    o.max_running = 4;
    o.games_per_ip = 2;
    o.games_per_commitment = 2;
    o.max_game_mb = 512;
    o.max_op_mflop = 20000;
    o.min_mflops = (int)(VT_GAME_MIN_RATE / 1e6);
    o.max_work_s = 7200;
    o.challenge_ms = 5000;
    o.handshake_ms = VT_GATE_DEFAULT_HANDSHAKE_MS;
    o.max_pending = VT_GATE_DEFAULT_PENDING;
    o.pending_per_ip = VT_GATE_DEFAULT_PENDING_PER_IP;
    const vt_cli_opt opts[] = {VT_CLI_INT('D', "--deadline-ms", 1, INT32_MAX, &o.deadline_ms),
                               VT_CLI_INT('g', "--games", 0, INT32_MAX, &o.max_games),
                               VT_CLI_INT('C', "--clock-ms", 1, INT32_MAX, &o.clock_ms),
                               VT_CLI_INT('R', "--max-running", 1, INT32_MAX, &o.max_running),
                               VT_CLI_INT('I', "--games-per-ip", 1, INT32_MAX, &o.games_per_ip),
                               VT_CLI_INT('G', "--games-per-commitment", 1, INT32_MAX, &o.games_per_commitment),
                               VT_CLI_INT('M', "--max-game-mb", 1, INT32_MAX, &o.max_game_mb),
                               VT_CLI_INT('F', "--max-op-mflop", 1, INT32_MAX, &o.max_op_mflop),
                               VT_CLI_INT('m', "--min-mflops", 1, 65535, &o.min_mflops),
                               VT_CLI_INT('w', "--max-work-s", 1, INT32_MAX, &o.max_work_s),
                               VT_CLI_INT('B', "--heartbeat-ms", 1, INT32_MAX, &o.heartbeat_ms),
                               VT_CLI_INT('c', "--challenge-ms", 1, INT32_MAX, &o.challenge_ms),
                               VT_CLI_INT('H', "--handshake-ms", 1, INT32_MAX, &o.handshake_ms),
                               VT_CLI_INT('P', "--max-pending", 1, INT32_MAX, &o.max_pending),
                               VT_CLI_INT('J', "--pending-per-ip", 1, INT32_MAX, &o.pending_per_ip),
                               VT_CLI_ORDER('o', "--order", &o.order),
                               VT_CLI_END};
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'l': o.listen = optarg; break;
        case 'k': o.key_path = optarg; break;
        case 'd': o.data_root = optarg; break;
        case 't': o.transcript_dir = optarg; break;
        case 'p': o.port_file = optarg; break;
        case 'q': o.quiet = 1; break;
        case 'K': pin_path = optarg; break;
        case 'N': o.no_calibrate = 1, serve_only = 1; break;
        case 'T':
            if (vt_game_arith_parse(optarg, tc_factor)) return vt_cli_usage_error(usage, "arbiter: %s", vt_errmsg());
            o.tc_factor = tc_factor, serve_only = 1;
            break;
        default:
            if (vt_cli_opt_parse("arbiter", opts, c, optarg, usage)) return VT_EXIT_USAGE;
        }
    }
    if (strcmp(cmd, "serve") == 0) {
        if (!o.listen || !o.key_path || optind != argc || o.deadline_ms <= 0 || pin_path)
            return vt_cli_usage_error(usage, NULL);
        if (o.clock_ms < o.deadline_ms) {
            fprintf(stderr, "arbiter: --clock-ms (%d) must be at least --deadline-ms (%d)\n", o.clock_ms, o.deadline_ms);
            return VT_EXIT_USAGE;
        }
        vt_err se = vt_arbiter_serve(&o);
        if (se) {
            fprintf(stderr, "arbiter: %s\n", vt_errmsg());
            return se == VT_ERR_INTERNAL ? VT_EXIT_INTERNAL : VT_EXIT_CANNOT;
        }
        return VT_EXIT_OK;
    }
    if (strcmp(cmd, "check") == 0) {
        if (optind != argc - 1 || serve_only) return vt_cli_usage_error(usage, NULL);
        uint8_t pin[32];
        if (pin_path && (vt_sign_init() || vt_sign_read_public_key(pin_path, pin))) {
            fprintf(stderr, "arbiter check: --arbiter-key %s: %s\n", pin_path, vt_errmsg());
            return VT_EXIT_USAGE;
        }
        vt_game_result r;
        vt_check_report rp;
        vt_err ce = vt_arbiter_check(argv[optind], o.data_root, o.order, pin_path ? pin : NULL, &r, &rp);
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
    return vt_cli_usage_error(usage, "arbiter: unknown command \"%s\"", cmd);
}

int main(int argc, char **argv)
{
    const char *bad = NULL; /* --threads N, wherever it stands (common/vt_par.h) */
    if (vt_par_take_option(&argc, argv, &bad)) {
        fprintf(stderr, "%s: --threads %s: expected a number of threads from 1 to %d\n", "arbiter", bad, VT_PAR_MAX);
        return VT_EXIT_USAGE;
    }
    int st = main_dispatch(argc, argv);
    /* after the error message: where the error was raised (VT_DEBUG >= 1 or VT_DEBUG_ERRORS=1) */
    if (st != VT_EXIT_OK) vt_err_site_print("arbiter");
    return st;
}
