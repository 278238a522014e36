/* trainer serve: the trainer's side of the dispute game (game/vt_serve.h). */
#include <stdio.h>
#include <string.h>

#include "../merkle/vt_sign.h"
#include "../protocol/vt_proto.h"
#include "trainer.h"

/* --arbiter-key FILE.pub: repeatable, 1 to VT_SERVE_MAX_ARBITERS */
static vt_err opt_arbiter_key(void *p, const char *v)
{
    vt_serve_opts *o = p;
    if (o->n_arbiters == VT_SERVE_MAX_ARBITERS)
        return vt_set_error(VT_ERR_ARG, "at most %d --arbiter-key", VT_SERVE_MAX_ARBITERS);
    vt_err e = vt_sign_init();
    if (!e) e = vt_sign_read_public_key(v, o->arbiter_pk[o->n_arbiters]);
    if (e) { /* the user's file: a usage error */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", vt_errmsg());
        return vt_set_error(VT_ERR_ARG, "%s", msg);
    }
    o->n_arbiters++;
    return VT_OK;
}

int trainer_serve(int argc, char **argv)
{
    vt_serve_opts o;
    memset(&o, 0, sizeof o);
    o.order = VT_ORDER_BLAS;
    o.idle_ms = 60000;
    o.max_sessions = 16;
    o.sessions_per_arbiter = 8;
    o.chain_cache = 4;
    o.record_ttl_s = 7 * 24 * 3600;
    o.handshake_ms = VT_GATE_DEFAULT_HANDSHAKE_MS;
    o.max_pending = VT_GATE_DEFAULT_PENDING;
    o.pending_per_ip = VT_GATE_DEFAULT_PENDING_PER_IP;
    const vt_cli_opt opts[] = {
        VT_OPT_S("--listen", "HOST:PORT", "where to listen (required)", &o.listen),
        VT_OPT_S("--key", "KEYFILE", "the trainer's secret key, the run's signer (required)", &o.key_path),
        VT_OPT_FN_("--arbiter-key", "FILE.pub", "an arbiter to answer (repeatable, 1 to 16; anyone else gets an\n"
                                                "ERROR); the record names them: no other arbiter can judge this run",
                   opt_arbiter_key, &o),
        VT_OPT_S("--advertise", "HOST:PORT", "the address to sign (default: the --listen host, bound port)",
                 &o.advertise),
        VT_OPT_S_OLD("--service", "--service-file", "FILE", "where to write the signed service record (default\n"
                                                              "RUN_DIR/service.vtsr)", &o.service_file),
        VT_OPT_I("--record-ttl", "SECONDS", "the record's lifetime (default 604800, 7 days; at least 1200, twice\n"
                                            "the 600 s floor arbiters check); re-signed when half is left",
                 1, INT32_MAX, &o.record_ttl_s),
        VT_OPT_O("--order", "the run's order (default blas)", &o.order),
        VT_OPT_S("--data-dir", "DIR", VT_HELP_DATA_DIR, &o.data_root),
        VT_OPT_I("--max-sessions", "N", "sessions at once, all arbiters (default 16, at most 128)", 1, 128,
                 &o.max_sessions),
        VT_OPT_I("--sessions-per-arbiter", "N", "of those, per arbiter key (default 8); at a limit the oldest idle\n"
                                                "session of that arbiter (or of the busiest one) is closed",
                 1, 128, &o.sessions_per_arbiter),
        VT_OPT_I("--idle-ms", "N", "close a session silent this long (default 60000)", 1, INT32_MAX, &o.idle_ms),
        VT_OPT_U("--max-recompute-steps", "N", "steps one game may make the trainer recompute; each arbiter key has\n"
                                               "a bucket of 4 such budgets, refilled one a minute (default: 8 x\n"
                                               "checkpoint_every + 4 x the committed-state gap + 16)",
                 1, UINT64_MAX, &o.max_recompute_steps),
        VT_OPT_I("--chain-cache", "N", "segment chains cached for all sessions (default 4, 0..64)", 0,
                 VT_SERVE_CACHE_MAX, &o.chain_cache),
        VT_OPT_I("--handshake-ms", "N", "TLS handshake deadline (default 3000)", 1, INT32_MAX, &o.handshake_ms),
        VT_OPT_I("--max-pending", "N", "connections not yet authenticated (default 64)", 1, 65536, &o.max_pending),
        VT_OPT_I("--pending-per-ip", "N", "of those, from one IP address (default 16)", 1, 65536, &o.pending_per_ip),
        VT_OPT_S("--port-file", "FILE", "write the bound port here once listening (tests)", &o.port_file),
        VT_OPT_I("--connections", "N", "stop after N sessions (tests; default 0: serve forever)", 0, INT32_MAX,
                 &o.max_connections),
        VT_OPT_F("--quiet", "no progress lines", &o.quiet),
        VT_OPT_END};
    const vt_cli_cmd cmd = {
        "trainer serve", "RUN_DIR --listen HOST:PORT --key KEYFILE --arbiter-key FILE.pub... [options]",
        "answer the named arbiters' questions about the committed run (dispute game, TLS 1.3); signs\n"
        "the service record (RUN_DIR/service.vtsr, or --service FILE) that tells arbiters where, until\n"
        "when and to which arbiters the trainer answers (re-signed while serving, before it expires)",
        "blas (the run's: give the order the run was trained with)", opts, trainer_test_serve_opts(&o), 1, 1, 0, NULL};
    vt_cli_args a;
    int st = vt_cli_parse(&cmd, argc, argv, 2, &a);
    if (st >= 0) return st;
    if (!o.listen || !o.key_path || o.n_arbiters == 0) {
        fprintf(stderr, "trainer serve: RUN_DIR, --listen HOST:PORT, --key KEYFILE and at least one --arbiter-key "
                        "FILE.pub are required (the trainer answers only the arbiters it names)\n");
        return VT_EXIT_USAGE;
    }
    if (o.advertise && vt_service_check_addr(o.advertise) != VT_OK) {
        fprintf(stderr, "trainer serve: --advertise: %s\n", vt_errmsg());
        return VT_EXIT_USAGE;
    }
    int short_ok = o.serve_hooks && o.serve_hooks->short_record && o.serve_hooks->short_record(o.serve_hooks->ctx);
    if (o.record_ttl_s < VT_SERVE_MIN_TTL_S && !short_ok) {
        fprintf(stderr, "trainer serve: --record-ttl %d: a service record lives at least %d s (twice the lifetime floor "
                        "of %d s that arbiters and auditors check, docs/dispute.md)\n", o.record_ttl_s,
                VT_SERVE_MIN_TTL_S, VT_RECORD_FLOOR_S);
        return VT_EXIT_USAGE;
    }
    o.run_dir = a.v[0];
    vt_err se = vt_serve_run(&o);
    if (se) {
        fprintf(stderr, "trainer serve: %s\n", vt_errmsg());
        return vt_cli_exit_for_input(se); /* the run is the input: 2; an internal failure 70 */
    }
    return VT_EXIT_OK;
}
