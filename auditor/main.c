/* auditor - replays a committed training run on its own evaluation order and checks it.
 *
 *   auditor verify RUN_DIR [--order ORDER] [--recipe FILE] [--pubkey FILE] [--data-dir DIR] [--init FILE]
 *                  [--from S] [--to E] [--jobs N] [--report FILE|-] [--quiet]
 *
 * Exit status: 0 verified, 1 rejected, 2 cannot check (unreadable/corrupt input), 64 usage.
 */
#include <dlfcn.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/vt_cli_opts.h"
#include "../common/vt_cli.h"
#include "../common/vt_par.h"
#include "../common/vt_env.h"
#include "../game/vt_game.h"
#include "../model/vt_model.h"
#include "../run/vt_audit.h"
#include "../dist/vt_dist.h"
#include "../game/vt_challenge.h"
#include "../cert/vt_cert.h"
#ifdef VT_TEST_HOOKS
#include "../tests/tools/vt_cheats.h"
static vt_cheats g_cheats; /* the test build's adversaries (tests/vt_cheats.h) */
#endif

static void usage(FILE *f)
{
    fprintf(f, "usage: auditor verify RUN_DIR [options]\n"
               "  --threads N      the threads of each replay's loops and BLAS (any command; default\n"
               "                   VT_THREADS, else the CPUs; the bits do not depend on it)\n"
               "  --order ORDER    the auditor's evaluation order: split (default: the BLAS on each half\n"
               "                   of every reduction), blas, forward, reverse, pairwise, permuted, sorted\n"
               "                   (the trainer's default is blas)\n"
               "  --recipe FILE    also check that the run used exactly this recipe\n"
               "  --pubkey FILE    also check that the commitment is signed by this key (KEYFILE.pub)\n"
               "  --data-dir DIR   dataset root (default: $VT_DATA_DIR or the repository's data/); a relative\n"
               "                   path in the run's dataset (safetensors:, npy:, text:, file:) is taken from it\n"
               "                   (else from the current directory)\n"
               "  --init FILE      a run trained with --init: check that it started from FILE (default: the\n"
               "                   run directory's copy, init.safetensors, checked against the manifest)\n"
               "  --backend NAME   cpu (default) or cuda: replay the GEMMs on the GPU (docs/cuda.md)\n"
               "  --from S --to E  audit steps S+1..E only, starting from the checkpoint at S\n"
               "  --jobs N         replay N segments (split at checkpoints) in parallel (reduced to what the\n"
               "                   memory budget holds)\n"
               "  --max-memory SIZE  the memory budget, e.g. 8G (default: the available memory): a run whose\n"
               "                   model needs more cannot be checked (exit 2), before anything is allocated\n"
               "  --report FILE    write a JSON report (\"-\": standard output)\n"
               "  under mpirun (mpirun -np M auditor verify ...) the segments (M x --jobs) are split over\n"
               "                   the M ranks: the verdict and report of one process with as many segments\n"
               "  --quiet          no progress line\n"
               "exit status: 0 verified, 1 rejected, 2 cannot check, 64 usage error, 70 internal failure\n"
               "usage: auditor challenge RUN_DIR --arbiter HOST:PORT --arbiter-key FILE.pub --key KEYFILE\n"
               "                         [--service FILE] [--order ORDER] [--step S] [--transcript FILE]\n"
               "                         [--init FILE]\n"
               "  play the dispute game after a rejected verify: prints the rounds and the verdict\n"
               "  --arbiter-key FILE.pub  the arbiter's key, pinned (required): it must be one the trainer's\n"
               "                   service record names; a verdict that is not for this challenge (its\n"
               "                   commitment, step, claim, nonce, this key) is refused (exit 2)\n"
               "  --no-pin-arbiter UNSAFE: accept whatever key answers at --arbiter, if the record names it\n"
               "  --init FILE      a run started from a file (trainer train --init): that file (default: the\n"
               "                   run's copy RUN_DIR/init.safetensors)\n"
               "  --wait-ms N      keep retrying an arbiter that answers busy (its admission limits) for N ms\n"
               "                   (default 600000); other failures to reach it, for --deadline-ms\n"
               "  --service FILE   the trainer's signed service record (default RUN_DIR/service.vtsr, written by\n"
               "                   `trainer serve`): the arbiter reaches the trainer only at the address the\n"
               "                   trainer signed there\n"
               "  exit status: 0 the trainer lost, 1 the auditor lost, 2 no verdict / error, 64 usage\n");
}

/* With several replay threads, keep each BLAS call single-threaded (OpenBLAS only). */
static void blas_threads(int n)
{
    void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
    if (set) set(n);
}

static int cmd_challenge(int argc, char **argv)
{
    static const struct option lo[] = {{"trainer", required_argument, 0, 't'}, {"service", required_argument, 0, 'S'}, {"arbiter", required_argument, 0, 'a'},
                                       {"key", required_argument, 0, 'k'},     {"arbiter-key", required_argument, 0, 'K'},
                                       {"data-dir", required_argument, 0, 'd'}, {"transcript", required_argument, 0, 'T'},
                                       {"order", required_argument, 0, 'o'},   {"step", required_argument, 0, 's'},
                                       {"deadline-ms", required_argument, 0, 'D'},
                                       {"wait-ms", required_argument, 0, 'W'},
                                       {"quiet", no_argument, 0, 'q'},
                                       {"no-pin-arbiter", no_argument, 0, 'U'},
                                       {"init", required_argument, 0, 'I'},
#ifdef VT_TEST_HOOKS
                                       {"lie", required_argument, 0, 'L'},
                                       {"slow", required_argument, 0, 'w'},
#endif
                                       {0, 0, 0, 0}};
    vt_challenge_opts o;
    memset(&o, 0, sizeof o);
    o.order = VT_ORDER_PAIRWISE;
    o.deadline_ms = 30000;
    o.wait_ms = 600000;
    const vt_cli_opt opts[] = {VT_CLI_U64('s', "--step", 1, UINT64_MAX, &o.step),
                               VT_CLI_INT('D', "--deadline-ms", 1, INT32_MAX, &o.deadline_ms),
                               VT_CLI_INT('W', "--wait-ms", 0, INT32_MAX, &o.wait_ms),
                               VT_CLI_ORDER('o', "--order", &o.order), VT_CLI_END};
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 't':
            fprintf(stderr, "auditor challenge: --trainer is gone: the arbiter takes the trainer's address only from "
                            "the trainer's signed service record (RUN_DIR/service.vtsr, or --service FILE)\n");
            return VT_EXIT_USAGE;
        case 'S': o.service_path = optarg; break;
        case 'a': o.arbiter_addr = optarg; break;
        case 'k': o.key_path = optarg; break;
        case 'K': o.arbiter_pk_path = optarg; break;
        case 'U': o.no_pin_arbiter = 1; break;
        case 'd': o.data_root = optarg; break;
        case 'T': o.transcript = optarg; break;
        case 'I': o.init_path = optarg; break;
        case 'q': o.quiet = 1; break;
#ifdef VT_TEST_HOOKS
        case 'L':
            if (vt_cheats_lie(&g_cheats, optarg) != VT_OK) {
                fprintf(stderr, "auditor challenge: %s\n", vt_errmsg());
                return VT_EXIT_USAGE;
            }
            o.hooks = &g_cheats.hooks;
            o.until = g_cheats.step;
            break;
        case 'w': /* a slow auditor: each answer MS late */
            if (vt_cli_int("--slow", optarg, 0, 600000, &o.answer_delay_ms) != VT_OK) {
                fprintf(stderr, "auditor challenge: %s\n", vt_errmsg());
                return VT_EXIT_USAGE;
            }
            break;
#endif
        default:
            if (vt_cli_opt_parse("auditor challenge", opts, c, optarg, usage)) return VT_EXIT_USAGE;
        }
    }
    if (optind != argc - 1 || !o.arbiter_addr || !o.key_path) {
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
    o.run_dir = argv[optind];
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

/* auditor certify RUN_DIR ... / auditor check-certificate CERT RUN_DIR (docs/certify.md) */
static void usage_cert(FILE *f)
{
    fprintf(f, "usage: auditor certify RUN_DIR --eps E --examples N [--method ibp|crown|alpha-crown]\n"
               "                       [--intermediate crown|ibp]\n"
               "                       [--out CERT --key KEYFILE] [--report FILE.json|-] [--pubkey FILE]\n"
               "                       [--data-dir DIR] [--order ORDER] [--write-vnnlib DIR] [--quiet]\n"
               "       auditor certify --onnx NET.onnx --vnnlib PROP.vnnlib [--method ...] [--timeout SECONDS]\n"
               "                       [--cex FILE] [--out CERT --key KEYFILE] [--report FILE.json|-] [--quiet]\n"
               "       auditor certify RUN_DIR --vnnlib PROP.vnnlib [--pubkey FILE] [--method ...] [--timeout SECONDS]\n"
               "                       [--cex FILE] [--out CERT --key KEYFILE] [--report FILE.json|-] [--quiet]\n"
               "       auditor certify --instances instances.csv [--method ...] [--timeout SECONDS]\n"
               "       auditor check-certificate CERT RUN_DIR [--signer FILE.pub] [--pubkey FILE] [--data-dir DIR]\n"
               "                       [--order ORDER]\n"
               "       auditor check-certificate CERT --onnx NET.onnx --vnnlib PROP.vnnlib [--signer FILE.pub]\n"
               "       auditor check-certificate CERT RUN_DIR --vnnlib PROP.vnnlib [--signer FILE.pub] [--pubkey FILE]\n"
               "       auditor keygen KEYFILE [--force]\n"
               "  the L-infinity ball of radius E (clipped to [0, 1]) around each of the first N test examples of\n"
               "  a committed MLP run: verified (sound bounds, rounding included), falsified (a counterexample\n"
               "  confirmed by the project's evaluation) or unknown; --out writes the signed certificate,\n"
               "  check-certificate recomputes it and compares the bytes. With --onnx / --vnnlib: a VNN-LIB\n"
               "  property of an ONNX feed-forward ReLU network (or of a committed MLP or residual CNN run), the VNN-COMP result line unsat / sat / unknown /\n"
               "  timeout on standard output (sat: the counterexample with --cex), a table per disjunct on stderr\n"
               "  exit status: 0 done (certify) / the certificate holds (check), 2 cannot check, mismatch or a\n"
               "  malformed file, 64 usage error or an ONNX operator / VNN-LIB construct not supported\n"
               "  --intermediate crown|ibp: a residual CNN's or convolutional ONNX file's pre-ReLU bounds for crown and\n"
               "  alpha-crown: backward passes per neuron (crown, the default) or IBP's (ibp: CROWN-IBP, faster)\n"
               "  --shard tp|fsdp|none: under mpirun -np N, the network split over the ranks (tp: each layer's rows,\n"
               "  fsdp: each layer gathered when used; none: every rank whole), the same certificate for every N;\n"
               "  rank 0 writes the output (not with --timeout or --instances)\n");
}

/* --shard: the ranks' communicator, opened by cmd_certify_sharded before the command runs */
static vt_comm *g_cert_comm;
static int cmd_certify_sharded(int argc, char **argv, int check, const char *shard, const char *timeout,
                               const char *instances);

/* certify / check-certificate with --onnx and --vnnlib (docs/certify.md "ONNX and VNN-LIB") */
static int cmd_certify_spec(int argc, char **argv, int check, const vt_cert_opts *o, vt_cert_spec_opts *so, const char *timeout,
                            const char *eps, uint64_t n, const char *signer, const char *instances,
                            vt_cli_usage_fn *usage_fn)
{
    if (instances && (check || so->onnx_path || so->vnnlib_path || so->cex_path || o->out_path))
        return vt_cli_usage_error(usage_fn, "auditor certify --instances: no --onnx, --vnnlib, --cex, --out, check-certificate");
    int run = !instances && !so->onnx_path; /* RUN_DIR --vnnlib PROP: the committed run's network */
    if (!instances && !so->vnnlib_path)
        return vt_cli_usage_error(usage_fn, "auditor: --onnx and --vnnlib go together");
    if (run && (eps || n || o->data_root || o->vnnlib_dir))
        return vt_cli_usage_error(usage_fn, "auditor: --eps, --examples, --data-dir, --write-vnnlib: not with --vnnlib "
                                            "(the property gives the box)");
    if (!run && (eps || n || o->pubkey_path || o->data_root || o->vnnlib_dir))
        return vt_cli_usage_error(usage_fn,
                                  "auditor: --eps, --examples, --pubkey, --data-dir, --write-vnnlib are for committed runs");
    if (run && argc - optind != (check ? 2 : 1))
        return vt_cli_usage_error(usage_fn, check ? "auditor check-certificate: CERT RUN_DIR --vnnlib PROP expected"
                                                  : "auditor certify: RUN_DIR --vnnlib PROP expected");
    if (run) so->run_dir = argv[optind + check], so->pubkey_path = o->pubkey_path, so->order = o->order;
    if (!run && !vt_cert_onnx_supported()) {
        fprintf(stderr, "auditor: this auditor was built without ONNX support\n");
        return VT_EXIT_CANNOT;
    }
    so->set = o->set, so->key_path = o->key_path, so->out_path = o->out_path, so->report_path = o->report_path;
    so->quiet = o->quiet;
    if (timeout) {
        char *end = NULL;
        so->timeout = strtod(timeout, &end);
        if (!end || *end || !(so->timeout > 0 && so->timeout < 1e9))
            return vt_cli_usage_error(usage_fn, "auditor certify: --timeout SECONDS: a positive number");
    }
    if (check) {
        if (!run && argc - optind != 1) return vt_cli_usage_error(usage_fn, "auditor check-certificate: CERT expected");
        vt_err e = vt_cert_spec_check(argv[optind], so, signer);
        if (e) {
            fprintf(stderr, "auditor check-certificate: %s\n", vt_errmsg());
            return e == VT_ERR_ARG || e == VT_ERR_UNSUPPORTED ? VT_EXIT_USAGE : vt_cli_exit_for_input(e);
        }
        printf("certificate %s: recomputed from %s and %s, the same bytes; signature valid\n", argv[optind],
               run ? so->run_dir : so->onnx_path, so->vnnlib_path);
        return VT_EXIT_OK;
    }
    if (!run && argc - optind != 0) return vt_cli_usage_error(usage_fn, "auditor certify: no RUN_DIR with --onnx");
    if (instances) {
        vt_cert_spec_summary sum;
        vt_err e = vt_cert_spec_instances(instances, so, &sum);
        if (e) {
            fprintf(stderr, "auditor certify: %s\n", vt_errmsg());
            return e == VT_ERR_ARG || e == VT_ERR_UNSUPPORTED ? VT_EXIT_USAGE : vt_cli_exit_for_input(e);
        }
        printf("%s: %u instances: %u unsat (verified %.1f%%), %u sat, %u unknown, %u timeout; %.3f s\n",
               vt_cert_method_name(so->set.method), sum.n, sum.count[VT_CERT_UNSAT],
               sum.n ? 100.0 * sum.count[VT_CERT_UNSAT] / sum.n : 0.0, sum.count[VT_CERT_SAT],
               sum.count[VT_CERT_SPEC_UNKNOWN], sum.count[VT_CERT_TIMEOUT], sum.seconds);
        return VT_EXIT_OK;
    }
    if (so->out_path && !so->key_path) return vt_cli_usage_error(usage_fn, "auditor certify: --out needs --key KEYFILE");
    vt_cert_spec_answer a;
    vt_err e = vt_cert_spec_run(so, &a);
    if (e) {
        fprintf(stderr, "auditor certify: %s\n", vt_errmsg());
        return e == VT_ERR_ARG || e == VT_ERR_UNSUPPORTED ? VT_EXIT_USAGE : vt_cli_exit_for_input(e);
    }
    printf("%s\n", vt_cert_spec_answer_name(a));
    if (a == VT_CERT_TIMEOUT && so->out_path) fprintf(stderr, "auditor certify: timeout: no certificate written\n");
    return VT_EXIT_OK;
}

static int cmd_certify(int argc, char **argv, int check)
{
    static const struct option lo[] = {{"eps", required_argument, 0, 'e'},      {"examples", required_argument, 0, 'n'},
                                       {"method", required_argument, 0, 'm'},   {"out", required_argument, 0, 'O'},
                                       {"key", required_argument, 0, 'k'},      {"report", required_argument, 0, 'R'},
                                       {"pubkey", required_argument, 0, 'p'},   {"data-dir", required_argument, 0, 'd'},
                                       {"order", required_argument, 0, 'o'},    {"signer", required_argument, 0, 's'},
                                       {"quiet", no_argument, 0, 'q'},          {"help", no_argument, 0, 'h'},
                                       {"onnx", required_argument, 0, 'X'},     {"vnnlib", required_argument, 0, 'V'},
                                       {"timeout", required_argument, 0, 'T'},  {"cex", required_argument, 0, 'C'},
                                       {"write-vnnlib", required_argument, 0, 'W'},
                                       {"instances", required_argument, 0, 'I'},
                                       {"shard", required_argument, 0, 'S'},
                                       {"intermediate", required_argument, 0, 'i'},
                                       {0, 0, 0, 0}};
    vt_cert_spec_opts so;
    memset(&so, 0, sizeof so);
    const char *timeout = NULL, *instances = NULL, *shard = NULL, *inter = NULL;
    vt_cert_opts o;
    memset(&o, 0, sizeof o);
    vt_cert_settings_default(&o.set, VT_CERT_CROWN);
    vt_order order = VT_ORDER_SPLIT;
    const char *signer = NULL, *eps = NULL;
    uint64_t n = 0;
    const vt_cli_opt opts[] = {VT_CLI_ORDER('o', "--order", &order), VT_CLI_U64('n', "--examples", 1, 1000000, &n),
                               VT_CLI_END};
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'e': eps = optarg; break;
        case 'm':
            if (!strcmp(optarg, "ibp")) vt_cert_settings_default(&o.set, VT_CERT_IBP);
            else if (!strcmp(optarg, "crown")) vt_cert_settings_default(&o.set, VT_CERT_CROWN);
            else if (!strcmp(optarg, "alpha-crown")) vt_cert_settings_default(&o.set, VT_CERT_ALPHA_CROWN);
            else return vt_cli_usage_error(usage_cert, "auditor: --method %s: expected ibp, crown or alpha-crown", optarg);
            break;
        case 'O': o.out_path = optarg; break;
        case 'k': o.key_path = optarg; break;
        case 'R': o.report_path = optarg; break;
        case 'p': o.pubkey_path = optarg; break;
        case 'd': o.data_root = optarg; break;
        case 's': signer = optarg; break;
        case 'q': o.quiet = 1; break;
        case 'X': so.onnx_path = optarg; break;
        case 'V': so.vnnlib_path = optarg; break;
        case 'T': timeout = optarg; break;
        case 'C': so.cex_path = optarg; break;
        case 'W': o.vnnlib_dir = optarg; break;
        case 'I': instances = optarg; break;
        case 'S': shard = optarg; break;
        case 'i': inter = optarg; break;
        case 'h': usage_cert(stdout); return VT_EXIT_OK;
        default: {
            int st = vt_cli_opt_parse("auditor", opts, c, optarg, usage_cert);
            if (st != VT_EXIT_OK) return st;
        }
        }
    }
    o.order = (int)order, o.examples = (uint32_t)n;
    if (inter) { /* after --method (which resets the settings) */
        if (check) return vt_cli_usage_error(usage_cert, "auditor check-certificate: --intermediate: the certificate records it");
        if (strcmp(inter, "crown") && strcmp(inter, "ibp"))
            return vt_cli_usage_error(usage_cert, "auditor: --intermediate %s: expected crown or ibp", inter);
        if (o.set.method == VT_CERT_IBP)
            return vt_cli_usage_error(usage_cert, "auditor: --intermediate: for --method crown or alpha-crown (IBP has none)");
        o.set.inter = strcmp(inter, "ibp") ? VT_CERT_INTER_CROWN : VT_CERT_INTER_IBP;
    }
    if (check || (o.report_path && !strcmp(o.report_path, "-"))) o.quiet = 1;
    if (shard && !g_cert_comm) return cmd_certify_sharded(argc, argv, check, shard, timeout, instances);
    if (g_cert_comm && vt_dist_rank(g_cert_comm) != 0) { /* --shard: rank 0 writes for all */
        o.quiet = 1, o.out_path = NULL, o.report_path = NULL, o.vnnlib_dir = NULL;
        if (so.cex_path) so.cex_path = "/dev/null"; /* writing it evaluates the network: a collective */
    }
    if (so.onnx_path || so.vnnlib_path || instances)
        return cmd_certify_spec(argc, argv, check, &o, &so, timeout, eps, n, signer, instances, usage_cert);
    if (check) {
        if (argc - optind != 2) return vt_cli_usage_error(usage_cert, "auditor check-certificate: CERT RUN_DIR expected");
        o.run_dir = argv[optind + 1];
        vt_err e = vt_cert_check(argv[optind], &o, signer);
        if (e) {
            fprintf(stderr, "auditor check-certificate: %s\n", vt_errmsg());
            return vt_cli_exit_for_input(e);
        }
        printf("certificate %s: recomputed from %s, the same bytes; signature valid\n", argv[optind], o.run_dir);
        return VT_EXIT_OK;
    }
    if (argc - optind != 1) return vt_cli_usage_error(usage_cert, "auditor certify: RUN_DIR expected");
    o.run_dir = argv[optind];
    char *end = NULL;
    o.eps = eps ? strtod(eps, &end) : -1;
    if (!eps || !end || *end || !(o.eps >= 0 && o.eps <= 1))
        return vt_cli_usage_error(usage_cert, "auditor certify: --eps E in [0, 1] is required");
    if (!n) return vt_cli_usage_error(usage_cert, "auditor certify: --examples N is required");
    if (o.out_path && !o.key_path) return vt_cli_usage_error(usage_cert, "auditor certify: --out needs --key KEYFILE");
    vt_cert_result r;
    vt_err e = vt_cert_run(&o, &r);
    if (e) {
        fprintf(stderr, "auditor certify: %s\n", vt_errmsg());
        return e == VT_ERR_ARG || e == VT_ERR_UNSUPPORTED ? VT_EXIT_USAGE : vt_cli_exit_for_input(e);
    }
    if (!o.quiet || o.out_path)
        printf("%s eps %.17g: %u verified, %u falsified, %u unknown of %u (verified accuracy %.1f%%)%s%s\n",
               vt_cert_method_name(o.set.method), o.eps, r.verified, r.falsified, r.unknown, o.examples,
               r.verified + r.falsified + r.unknown
                   ? 100.0 * r.verified / (r.verified + r.falsified + r.unknown) : 0.0, o.out_path ? "; certificate " : "",
               o.out_path ? o.out_path : "");
    return VT_EXIT_OK;
}

/* certify / check-certificate --shard MODE (docs/certify.md "Sharded over ranks"): the communicator
 * opened, the mode set, the command run on every rank (rank 0's standard output only); a rank that
 * fails before the ranks' first agreement joins it, so that none waits for it */
static int cmd_certify_sharded(int argc, char **argv, int check, const char *shard, const char *timeout,
                               const char *instances)
{
    vt_cert_shard m = VT_CERT_SHARD_NONE;
    if (!strcmp(shard, "tp")) m = VT_CERT_SHARD_TP;
    else if (!strcmp(shard, "fsdp")) m = VT_CERT_SHARD_FSDP;
    else if (strcmp(shard, "none"))
        return vt_cli_usage_error(usage_cert, "auditor: --shard %s: expected tp, fsdp or none", shard);
    if (timeout || instances)
        return vt_cli_usage_error(usage_cert, "auditor: --shard: not with --timeout or --instances (the ranks would "
                                              "not stop together)");
    if (vt_dist_init(&g_cert_comm)) {
        fprintf(stderr, "auditor: %s\n", vt_errmsg());
        return VT_EXIT_CANNOT;
    }
    vt_cert_set_shard(g_cert_comm, m);
    if (vt_dist_rank(g_cert_comm) != 0 && !freopen("/dev/null", "w", stdout)) {
        fprintf(stderr, "auditor: cannot silence rank %d's standard output\n", vt_dist_rank(g_cert_comm));
        (void)vt_cert_shard_fail(vt_set_error(VT_ERR_IO, "cannot silence rank %d", vt_dist_rank(g_cert_comm)));
        (void)vt_dist_finalize(&g_cert_comm);
        return VT_EXIT_CANNOT;
    }
    int st = cmd_certify(argc, argv, check);
    if (st != VT_EXIT_OK) (void)vt_cert_shard_fail(st == VT_EXIT_USAGE ? VT_ERR_ARG : VT_ERR_IO);
    (void)vt_dist_finalize(&g_cert_comm);
    return st;
}

static int main_dispatch(int argc, char **argv)
{
#ifdef VT_TEST_HOOKS
    vt_cheats_init(&g_cheats);
#endif
    if (argc < 2) return vt_cli_usage_error(usage, NULL);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return VT_EXIT_OK;
    }
    /* the floating-point environment, e.g. FTZ set by a -ffast-math CBLAS at load: refused, exit 2 */
    if (vt_env_cli_check("auditor")) return VT_EXIT_CANNOT;
    if (strcmp(argv[1], "challenge") == 0) return cmd_challenge(argc, argv);
    if (strcmp(argv[1], "certify") == 0) return cmd_certify(argc, argv, 0);
    if (strcmp(argv[1], "check-certificate") == 0) return cmd_certify(argc, argv, 1);
    if (strcmp(argv[1], "keygen") == 0) return vt_cli_keygen("auditor", argc, argv, usage_cert, 0);
    if (strcmp(argv[1], "verify") != 0) return vt_cli_usage_error(usage, "auditor: unknown command \"%s\"", argv[1]);
    static const struct option lo[] = {{"order", required_argument, 0, 'o'},   {"recipe", required_argument, 0, 'r'},
                                       {"pubkey", required_argument, 0, 'p'},  {"data-dir", required_argument, 0, 'd'},
                                       {"init", required_argument, 0, 'I'},
                                       {"from", required_argument, 0, 'f'},    {"to", required_argument, 0, 't'},
                                       {"jobs", required_argument, 0, 'j'},    {"report", required_argument, 0, 'R'},
                                       {"quiet", no_argument, 0, 'q'},         {"help", no_argument, 0, 'h'},
                                       {"backend", required_argument, 0, 'b'},
                                       {"max-memory", required_argument, 0, 1001}, {0, 0, 0, 0}};
    vt_audit_opts o;
    uint64_t max_memory = 0;
    memset(&o, 0, sizeof o);
    o.order = VT_ORDER_SPLIT;
    o.jobs = 1;
    const char *report = NULL;
    const vt_cli_opt opts[] = {VT_CLI_ORDER('o', "--order", &o.order),
                               VT_CLI_U64('f', "--from", 0, (uint64_t)INT64_MAX, &o.from),
                               VT_CLI_U64('t', "--to", 1, (uint64_t)INT64_MAX, &o.to),
                               VT_CLI_INT('j', "--jobs", 1, 256, &o.jobs), VT_CLI_END};
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'r': o.recipe_path = optarg; break;
        case 'p': o.pubkey_path = optarg; break;
        case 'I': o.init_path = optarg; break;
        case 'd': o.data_root = optarg; break;
        case 'R': report = optarg; break;
        case 'q': o.quiet = 1; break;
        case 'b':
            if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda"))
                return vt_cli_usage_error(usage, "auditor: --backend %s: expected cpu or cuda", optarg);
            o.backend = optarg;
            break;
        case 'h': usage(stdout); return VT_EXIT_OK;
        case 1001: /* --max-memory */
            if (vt_cli_size("--max-memory", optarg, &max_memory) != VT_OK)
                return vt_cli_usage_error(usage, "auditor: %s", vt_errmsg());
            break;
        default:
            if (vt_cli_opt_parse("auditor", opts, c, optarg, usage)) return VT_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) return vt_cli_usage_error(usage, NULL);
    o.run_dir = argv[optind];
    if (o.jobs > 1) blas_threads(1);
    vt_model_set_memory_budget(max_memory, VT_ERR_LIMIT); /* a manifest beyond it: cannot check (2) */

    /* under mpirun the segments are split over the ranks; rank 0 speaks for all (one process: no MPI) */
    vt_comm *comm = NULL;
    if (vt_dist_init(&comm)) {
        fprintf(stderr, "auditor: %s\n", vt_errmsg());
        return VT_EXIT_CANNOT;
    }
    const int rank = vt_dist_rank(comm), nranks = vt_dist_size(comm);
    o.comm = comm;
    if (rank != 0) o.quiet = 1;
    vt_audit_result r;
    if (!o.quiet)
        fprintf(stderr, "auditor: replaying %s with order %s%s%s", o.run_dir, vt_order_name(o.order),
                o.backend ? ", backend " : "", o.backend ? o.backend : "");
    if (!o.quiet && nranks > 1) fprintf(stderr, " on %d ranks", nranks);
    if (!o.quiet) fputc('\n', stderr);
    vt_audit_run(&o, &r);
    (void)vt_dist_finalize(&comm);
    const int st = r.verdict == VT_VERDICT_VERIFIED   ? VT_EXIT_OK
                   : r.verdict == VT_VERDICT_REJECTED ? VT_EXIT_REJECTED
                   : strcmp(r.reason, "internal error") == 0 ? VT_EXIT_INTERNAL /* a bug of ours: no verdict */
                                                             : VT_EXIT_CANNOT;
    /* every rank has the same verdict; mpirun ends the job at the first rank that exits non-zero, so
     * the others exit 0 and rank 0 - after its verdict and report are out - gives mpirun its status */
    if (rank != 0) return VT_EXIT_OK;
    switch (r.verdict) {
    case VT_VERDICT_VERIFIED:
        printf("VERIFIED: %s\n  steps %llu..%llu replayed bit for bit (%llu steps, order %s, %.1f s, %.1f steps/s)\n"
               "  log entries applied: %llu; plausibility checks passed: %llu\n",
               o.run_dir, (unsigned long long)r.from + 1, (unsigned long long)r.to,
               (unsigned long long)r.steps_checked, r.order, r.seconds, (double)r.steps_checked / (r.seconds + 1e-9),
               (unsigned long long)r.entries_applied, (unsigned long long)r.checks_passed);
        break;
    case VT_VERDICT_REJECTED:
        printf("REJECTED: %s\n  reason: %s\n", o.run_dir, r.reason);
        if (r.step >= 0) printf("  first bad step: %lld\n", (long long)r.step);
        if (r.op >= 0) printf("  operation: %lld (%s)\n", (long long)r.op, r.op_name);
        if (r.index >= 0) printf("  element index: %lld\n", (long long)r.index);
        printf("  %s\n", r.detail);
        break;
    default:
        printf("CANNOT CHECK: %s\n  reason: %s\n  %s\n", o.run_dir, r.reason, r.detail);
        break;
    }
    if (report) {
        char *js = vt_audit_report_json(&r);
        FILE *f = strcmp(report, "-") == 0 ? stdout : fopen(report, "w");
        if (!js || !f || fprintf(f, "%s\n", js) < 0 || (f != stdout && fclose(f) != 0)) {
            fprintf(stderr, "auditor: cannot write the report %s\n", report);
            free(js);
            return VT_EXIT_CANNOT;
        }
        free(js);
    }
    return st;
}

int main(int argc, char **argv)
{
    const char *bad = NULL; /* --threads N, wherever it stands (common/vt_par.h) */
    if (vt_par_take_option(&argc, argv, &bad)) {
        fprintf(stderr, "%s: --threads %s: expected a number of threads from 1 to %d\n", "auditor", bad, VT_PAR_MAX);
        return VT_EXIT_USAGE;
    }
    int st = main_dispatch(argc, argv);
    /* after the error message: where the error was raised (VT_DEBUG >= 1 or VT_DEBUG_ERRORS=1) */
    if (st != VT_EXIT_OK) vt_err_site_print("auditor");
    return st;
}
