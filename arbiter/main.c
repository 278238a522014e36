/* arbiter - referees the dispute game between a trainer and an auditor (docs/dispute.md).
 *
 *   arbiter keygen KEYFILE [--force]
 *   arbiter serve --listen ADDR --key KEYFILE [--data-dir DIR] [--order ORDER] [--transcripts DIR]
 *                 [--deadline-ms N] [--games N] [--port-file FILE] [--quiet]
 *   arbiter check TRANSCRIPT [--data-dir DIR] [--order ORDER]
 *
 * Exit status: serve 0 / 2 on errors; check 0 when the recorded verdict is re-derived, 1 when
 * it is not, 2 when the transcript cannot be read; 64 usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_cli.h"
#include "../merkle/vt_sign.h"
#include "vt_arbiter.h"

static void usage(FILE *f)
{
    fprintf(f, "usage:\n"
               "  arbiter keygen KEYFILE [--force]\n"
               "  arbiter serve --listen HOST:PORT --key KEYFILE [--data-dir DIR] [--order ORDER]\n"
               "                [--transcripts DIR] [--deadline-ms N] [--games N] [--port-file FILE] [--quiet]\n"
               "      referee challenges: bisection over steps, then over the operations of the disputed\n"
               "      step, then recompute ONE operation and sign a verdict (sent to both parties)\n"
               "  arbiter check TRANSCRIPT [--data-dir DIR] [--order ORDER]\n"
               "      re-derive the verdict of a recorded game offline (every signature re-checked)\n"
               "exit status: 0 ok / verdict re-derived, 1 verdict not re-derived, 2 error, 64 usage\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? VT_EXIT_USAGE : VT_EXIT_OK;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "keygen") == 0) {
        int force = argc > 3 && strcmp(argv[3], "--force") == 0;
        if (argc < 3) {
            usage(stderr);
            return VT_EXIT_USAGE;
        }
        if (vt_sign_keygen_files(argv[2], force, NULL)) {
            fprintf(stderr, "arbiter keygen: %s\n", vt_errmsg());
            return VT_EXIT_CANNOT;
        }
        printf("wrote %s (secret, mode 0600) and %s.pub\n", argv[2], argv[2]);
        return VT_EXIT_OK;
    }
    static const struct option lo[] = {{"listen", required_argument, 0, 'l'},   {"key", required_argument, 0, 'k'},
                                       {"data-dir", required_argument, 0, 'd'}, {"order", required_argument, 0, 'o'},
                                       {"transcripts", required_argument, 0, 't'},
                                       {"deadline-ms", required_argument, 0, 'D'}, {"games", required_argument, 0, 'g'},
                                       {"port-file", required_argument, 0, 'p'}, {"quiet", no_argument, 0, 'q'},
                                       {0, 0, 0, 0}};
    vt_arbiter_opts o;
    memset(&o, 0, sizeof o);
    o.order = VT_ORDER_REVERSE;
    o.deadline_ms = 30000;
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'l': o.listen = optarg; break;
        case 'k': o.key_path = optarg; break;
        case 'd': o.data_root = optarg; break;
        case 't': o.transcript_dir = optarg; break;
        case 'D':
        case 'g':
            if ((c == 'D' ? vt_cli_int("--deadline-ms", optarg, 1, INT32_MAX, &o.deadline_ms)
                          : vt_cli_int("--games", optarg, 0, INT32_MAX, &o.max_games)) != VT_OK) {
                fprintf(stderr, "arbiter: %s\n", vt_errmsg());
                return VT_EXIT_USAGE;
            }
            break;
        case 'p': o.port_file = optarg; break;
        case 'q': o.quiet = 1; break;
        case 'o':
            if (vt_order_parse(optarg, &o.order) != VT_OK) {
                fprintf(stderr, "arbiter: %s\n", vt_errmsg());
                return VT_EXIT_USAGE;
            }
            break;
        default: usage(stderr); return VT_EXIT_USAGE;
        }
    }
    if (strcmp(cmd, "serve") == 0) {
        if (!o.listen || !o.key_path || optind != argc || o.deadline_ms <= 0) {
            usage(stderr);
            return VT_EXIT_USAGE;
        }
        if (vt_arbiter_serve(&o)) {
            fprintf(stderr, "arbiter: %s\n", vt_errmsg());
            return VT_EXIT_CANNOT;
        }
        return VT_EXIT_OK;
    }
    if (strcmp(cmd, "check") == 0) {
        if (optind != argc - 1) {
            usage(stderr);
            return VT_EXIT_USAGE;
        }
        vt_game_result r;
        int matches = 0;
        if (vt_arbiter_check(argv[optind], o.data_root, o.order, &r, &matches)) {
            fprintf(stderr, "arbiter check: %s\n", vt_errmsg());
            return VT_EXIT_CANNOT;
        }
        static const char *const who[] = {"nobody", "the trainer", "the auditor", "both parties"};
        printf("%s: verdict against %s (%s) at step %llu, operation %u%s%s\n  %s\n",
               matches ? "RE-DERIVED" : "MISMATCH", who[r.v.loser & 3], vt_reason_name(r.v.reason_code),
               (unsigned long long)r.v.step, r.v.op, r.op_name[0] ? " " : "", r.op_name, r.v.reason);
        return matches ? VT_EXIT_OK : VT_EXIT_REJECTED;
    }
    fprintf(stderr, "arbiter: unknown command \"%s\"\n", cmd);
    usage(stderr);
    return VT_EXIT_USAGE;
}
