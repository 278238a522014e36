/* auditor challenge RUN_DIR: the auditor's side of the dispute game (game/vt_challenge.h). */
#include <stdio.h>
#include <string.h>

#include "../game/vt_game.h"
#include "auditor.h"

static vt_err opt_trainer(void *p, const char *v)
{
    (void)p, (void)v;
    return vt_set_error(VT_ERR_ARG, "--trainer is gone: the arbiter takes the trainer's address only from the "
                                    "trainer's signed service record (RUN_DIR/service.vtsr, or --service FILE)");
}

int auditor_challenge(int argc, char **argv)
{
    vt_challenge_opts o;
    memset(&o, 0, sizeof o);
    o.order = VT_ORDER_PAIRWISE;
    o.deadline_ms = 30000;
    o.wait_ms = 600000;
    const vt_cli_opt opts[] = {
        VT_OPT_S("--arbiter", "HOST:PORT", "the arbiter's address (required)", &o.arbiter_addr),
        VT_OPT_S("--arbiter-key", "FILE.pub", "the arbiter's key, pinned (required): it must be one the trainer's\n"
                                              "service record names; a verdict that is not for this challenge (its\n"
                                              "commitment, step, claim, nonce, this key) is refused (exit 2)",
                 &o.arbiter_pk_path),
        VT_OPT_F("--no-pin-arbiter", "UNSAFE: accept whatever key answers at --arbiter, if the record names it",
                 &o.no_pin_arbiter),
        VT_OPT_S("--key", "KEYFILE", "the auditor's secret key (required)", &o.key_path),
        VT_OPT_S("--service", "FILE", "the trainer's signed service record (default RUN_DIR/service.vtsr, written\n"
                                      "by `trainer serve`): the arbiter reaches the trainer only at the address\n"
                                      "the trainer signed there", &o.service_path),
        VT_OPT_O("--order", "the auditor's evaluation order in the game (default pairwise)", &o.order),
        VT_OPT_U("--step", "S", "the step to challenge (default: the first the replay rejects)", 1, UINT64_MAX,
                 &o.step),
        VT_OPT_S("--transcript", "FILE", "keep the game's transcript here", &o.transcript),
        VT_OPT_S("--data-dir", "DIR", VT_HELP_DATA_DIR, &o.data_root),
        VT_OPT_S("--init", "FILE", "a run started from a file (trainer train --init): that file (default: the\n"
                                   "run's copy RUN_DIR/init.safetensors)", &o.init_path),
        VT_OPT_I("--deadline-ms", "N", "how long to wait for each answer of the arbiter (default 30000)", 1,
                 INT32_MAX, &o.deadline_ms),
        VT_OPT_I("--wait-ms", "N", "keep retrying an arbiter that answers busy (its admission limits) for N ms\n"
                                   "(default 600000); other failures to reach it, for --deadline-ms",
                 0, INT32_MAX, &o.wait_ms),
        VT_OPT_F("--quiet", "no progress lines", &o.quiet),
        VT_OPT_FN_("--trainer", "ADDR", "gone: the trainer's address comes from its signed service record",
                   opt_trainer, NULL),
        VT_OPT_END};
    const vt_cli_cmd cmd = {
        "auditor challenge", "RUN_DIR --arbiter HOST:PORT --arbiter-key FILE.pub --key KEYFILE [options]",
        "play the dispute game after a rejected verify: prints the rounds and the verdict",
        "pairwise (the auditor's in the game: neither the trainer's blas nor verify's split)", opts,
        auditor_test_challenge_opts(&o), 1, 1, 0,
        "exit status: 0 the trainer lost, 1 the auditor lost, 2 no verdict / error, 64 usage"};
    vt_cli_args a;
    int st = vt_cli_parse(&cmd, argc, argv, 2, &a);
    if (st >= 0) return st;
    if (!o.arbiter_addr || !o.key_path) {
        fprintf(stderr, "auditor challenge: RUN_DIR, --arbiter and --key are required\n");
        return VT_EXIT_USAGE;
    }
    if (!o.arbiter_pk_path == !o.no_pin_arbiter) {
        fprintf(stderr, "auditor challenge: %s\n",
                o.no_pin_arbiter ? "--arbiter-key and --no-pin-arbiter exclude each other"
                                 : "--arbiter-key FILE.pub is required: the arbiter's key is pinned (a fake arbiter "
                                   "could send any verdict); --no-pin-arbiter turns pinning off (unsafe)");
        return VT_EXIT_USAGE;
    }
    o.run_dir = a.v[0];
    vt_challenge_result r;
    if (vt_challenge_run(&o, &r)) {
        fprintf(stderr, "auditor challenge: %s\n", vt_errmsg());
        return VT_EXIT_CANNOT;
    }
    static const char *const who[] = {"nobody", "the trainer", "the auditor", "both parties"};
    printf("VERDICT: against %s (%s) at step %llu, operation %u\n  %s\n  challenged step %llu; %llu questions "
           "answered; %.1f s\n",
           who[r.loser & 3], vt_reason_name(r.reason_code), (unsigned long long)r.step, r.op, r.reason,
           (unsigned long long)r.claimed_step, (unsigned long long)r.questions, r.seconds);
    return r.loser == VT_LOSER_TRAINER ? VT_EXIT_OK : r.loser == VT_LOSER_NONE ? VT_EXIT_CANNOT : VT_EXIT_REJECTED;
}
