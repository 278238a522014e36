/* arbiter serve: referee challenges (game/vt_arbiter.h). */
#include <stdio.h>
#include <string.h>

#include "../game/vt_arbiter.h"
#include "arbiter.h"

static double g_tc_factor[VT_GAME_ARITH_MAX];

static vt_err opt_tc_factor(void *p, const char *v)
{
    vt_arbiter_opts *o = p;
    VT_FORWARD_IF_ERROR(vt_game_arith_parse(v, g_tc_factor));
    o->tc_factor = g_tc_factor;
    return VT_OK;
}

int arbiter_serve(int argc, char **argv)
{
    vt_arbiter_opts o;
    memset(&o, 0, sizeof o);
    o.order = ARBITER_ORDER;
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
    const vt_cli_opt opts[] = {
        VT_OPT_S("--listen", "HOST:PORT", "where to listen (required)", &o.listen),
        VT_OPT_S("--key", "KEYFILE", "the arbiter's secret key, the verdicts' signer (required)", &o.key_path),
        VT_OPT_S("--data-dir", "DIR", "dataset root (default: $VT_DATA_DIR or the repository's data/)", &o.data_root),
        VT_OPT_O("--order", "the arbiter's own evaluation order (default reverse)", &o.order),
        VT_OPT_S("--transcripts", "DIR", "one transcript per game (default: the working directory)", &o.transcript_dir),
        VT_OPT_I("--deadline-ms", "N", "a party's deadline per answer (default 30000)", 1, INT32_MAX, &o.deadline_ms),
        VT_OPT_I("--clock-ms", "N", "each party's clock for a whole game: every wait for it, retries to reach\n"
                                    "it included, is charged to it (default 300000)", 1, INT32_MAX, &o.clock_ms),
        VT_OPT_I("--min-mflops", "N", "the rate floor: a question that makes the trainer recompute K steps adds\n"
                                      "K x (the step's flop / N Mflop/s) to its deadline, and once per\n"
                                      "computation to its clock (default 200, at most 65535)", 1, 65535, &o.min_mflops),
        VT_OPT_I("--max-work-s", "N", "refuse a game whose recomputation could be granted more than N s in all\n"
                                      "at the rate floor, in FP64-equivalent work (tensor-core GEMMs unweighed;\n"
                                      "default 7200; docs/dispute.md)", 1, INT32_MAX, &o.max_work_s),
        VT_OPT_FN_("--tc-factor", "MODE=X", "a tensor-core mode's GEMM flop weighs X (>= 1) FP64 GEMM flop in the\n"
                                            "grant (repeatable; e.g. tc-fp16-sm80=60); without it each tc-* mode's\n"
                                            "weight is calibrated at start-up (about 0.2 s)", opt_tc_factor, &o),
        VT_OPT_F("--no-calibrate", "the weights not set by --tc-factor are the documented defaults (50 for the\n"
                                   "sm80 modes, 40 for the others; docs/dispute.md \"Clocks\")", &o.no_calibrate),
        VT_OPT_I("--heartbeat-ms", "N", "while the trainer computes, a note to the auditor this often (default 20000)",
                 1, INT32_MAX, &o.heartbeat_ms),
        VT_OPT_I("--games", "N", "stop after N games (default 0: serve forever)", 0, INT32_MAX, &o.max_games),
        VT_OPT_I("--max-running", "N", "games played at once (default 4)", 1, INT32_MAX, &o.max_running),
        VT_OPT_I("--games-per-ip", "N", "of those, challenged from one IP address (default 2)", 1, INT32_MAX,
                 &o.games_per_ip),
        VT_OPT_I("--games-per-commitment", "N", "of those, about one run's commitment (default 2); one game per\n"
                                                "auditor key at a time", 1, INT32_MAX, &o.games_per_commitment),
        VT_OPT_I("--max-game-mb", "N", "memory a game may need, computed from its manifest (default 512)", 1,
                 INT32_MAX, &o.max_game_mb),
        VT_OPT_I("--max-op-mflop", "N", "the largest operation it may recompute, Mflop (default 20000)", 1, INT32_MAX,
                 &o.max_op_mflop),
        VT_OPT_I("--challenge-ms", "N", "a client's CHALLENGE must follow its handshake this soon (default 5000)", 1,
                 INT32_MAX, &o.challenge_ms),
        VT_OPT_I("--handshake-ms", "N", "TLS handshake deadline (default 3000)", 1, INT32_MAX, &o.handshake_ms),
        VT_OPT_I("--max-pending", "N", "connections not yet authenticated (default 64)", 1, INT32_MAX, &o.max_pending),
        VT_OPT_I("--pending-per-ip", "N", "of those, from one IP address (default 16)", 1, INT32_MAX, &o.pending_per_ip),
        VT_OPT_S("--port-file", "FILE", "write the bound port here once listening", &o.port_file),
        VT_OPT_F("--quiet", "no progress lines (rejections are still logged)", &o.quiet),
        VT_OPT_END};
    const vt_cli_cmd cmd = {"arbiter serve", "--listen HOST:PORT --key KEYFILE [options]",
                            "referee challenges: bisection over steps, then over the operations of the disputed\n"
                            "step, then recompute ONE operation and sign a verdict (sent to both parties)",
                            "reverse (the arbiter's own: neither the trainer's blas nor the auditor's split)", opts,
                            NULL, 0, 0, -1, "exit status: 0 stopped after --games, 2 an error, 64 usage"};
    vt_cli_args a;
    int st = vt_cli_parse(&cmd, argc, argv, 2, &a);
    if (st >= 0) return st;
    if (!o.listen || !o.key_path) {
        fprintf(stderr, "arbiter serve: --listen HOST:PORT and --key KEYFILE are required\n");
        return VT_EXIT_USAGE;
    }
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
