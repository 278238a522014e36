/* auditor certify / check-certificate: robustness certificates of a committed run, or VNN-LIB
 * properties of ONNX networks (cert/, docs/certify.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cert/vt_cert.h"
#include "../dist/vt_dist.h"
#include "auditor.h"

/* --shard: the ranks' communicator, opened by cmd_certify_sharded before the command runs */
static vt_comm *g_cert_comm;
static int cmd_certify_sharded(int argc, char **argv, int check, const char *shard, const char *timeout,
                               const char *instances);
static int cmd_certify(int argc, char **argv, int check);

/* certify / check-certificate with --onnx and --vnnlib (docs/certify.md "ONNX and VNN-LIB") */
static int cmd_certify_spec(const vt_cli_args *a, int check, const vt_cert_opts *o, vt_cert_spec_opts *so,
                            const char *timeout, const char *eps, uint64_t n, const char *signer, const char *instances)
{
    if (instances && (check || so->onnx_path || so->vnnlib_path || so->cex_path || so->result_path || o->out_path))
        return vt_cli_usage_error(NULL, "auditor certify --instances: no --onnx, --vnnlib, --cex, --result, --out, "
                                        "check-certificate");
    int run = !instances && !so->onnx_path; /* RUN_DIR --vnnlib PROP: the committed run's network */
    if (!instances && !so->vnnlib_path)
        return vt_cli_usage_error(NULL, "auditor: --onnx and --vnnlib go together");
    if (run && (eps || n || o->data_root || o->vnnlib_dir))
        return vt_cli_usage_error(NULL, "auditor: --eps, --examples, --data-dir, --write-vnnlib: not with --vnnlib "
                                            "(the property gives the box)");
    if (!run && (eps || n || o->pubkey_path || o->data_root || o->vnnlib_dir))
        return vt_cli_usage_error(NULL,
                                  "auditor: --eps, --examples, --pubkey, --data-dir, --write-vnnlib are for committed runs");
    if (run && a->n != (check ? 2 : 1))
        return vt_cli_usage_error(NULL, check ? "auditor check-certificate: CERT RUN_DIR --vnnlib PROP expected"
                                                  : "auditor certify: RUN_DIR --vnnlib PROP expected");
    if (run) so->run_dir = a->v[check], so->pubkey_path = o->pubkey_path, so->order = o->order;
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
            return vt_cli_usage_error(NULL, "auditor certify: --timeout SECONDS: a positive number");
    }
    if (check) {
        if (!run && a->n != 1) return vt_cli_usage_error(NULL, "auditor check-certificate: CERT expected");
        vt_err e = vt_cert_spec_check(a->v[0], so, signer);
        if (e) {
            fprintf(stderr, "auditor check-certificate: %s\n", vt_errmsg());
            return e == VT_ERR_ARG || e == VT_ERR_UNSUPPORTED ? VT_EXIT_USAGE : vt_cli_exit_for_input(e);
        }
        printf("certificate %s: recomputed from %s and %s, the same bytes; signature valid\n", a->v[0],
               run ? so->run_dir : so->onnx_path, so->vnnlib_path);
        return VT_EXIT_OK;
    }
    if (!run && a->n != 0) return vt_cli_usage_error(NULL, "auditor certify: no RUN_DIR with --onnx");
    if (instances) {
        vt_cert_spec_summary sum;
        vt_err e = vt_cert_spec_instances(instances, so, &sum);
        if (e) {
            fprintf(stderr, "auditor certify: %s\n", vt_errmsg());
            return e == VT_ERR_ARG || e == VT_ERR_UNSUPPORTED ? VT_EXIT_USAGE : vt_cli_exit_for_input(e);
        }
        printf("%s: %u instances: %u unsat (verified %.1f%%), %u sat, %u unknown, %u timeout; %.3f s\n",
               so->set.bab_domains ? "beta-crown" : vt_cert_method_name(so->set.method), sum.n, sum.count[VT_CERT_UNSAT],
               sum.n ? 100.0 * sum.count[VT_CERT_UNSAT] / sum.n : 0.0, sum.count[VT_CERT_SAT],
               sum.count[VT_CERT_SPEC_UNKNOWN], sum.count[VT_CERT_TIMEOUT], sum.seconds);
        return VT_EXIT_OK;
    }
    if (so->out_path && !so->key_path) return vt_cli_usage_error(NULL, "auditor certify: --out needs --key KEYFILE");
    vt_cert_spec_answer ans;
    vt_err e = vt_cert_spec_run(so, &ans);
    if (e) {
        fprintf(stderr, "auditor certify: %s\n", vt_errmsg());
        return e == VT_ERR_ARG || e == VT_ERR_UNSUPPORTED ? VT_EXIT_USAGE : vt_cli_exit_for_input(e);
    }
    printf("%s\n", vt_cert_spec_answer_name(ans));
    if (ans == VT_CERT_TIMEOUT && so->out_path) fprintf(stderr, "auditor certify: timeout: no certificate written\n");
    return VT_EXIT_OK;
}

static int cmd_certify(int argc, char **argv, int check)
{
    vt_cert_spec_opts so;
    memset(&so, 0, sizeof so);
    const char *timeout = NULL, *instances = NULL, *shard = NULL, *inter = NULL, *branching = NULL;
    vt_cert_opts o;
    memset(&o, 0, sizeof o);
    vt_order order = VT_ORDER_SPLIT;
    const char *signer = NULL, *eps = NULL;
    uint64_t n = 0, domains = 0, restarts = 0, iters = 0;
    int method = 1; /* crown */
    const vt_cli_opt opts[] = {
        VT_OPT_S("--eps", "E", "the L-infinity radius around each example, in [0, 1] (certify of a run: required)", &eps),
        VT_OPT_U("--examples", "N", "the first N test examples (certify of a run: required)", 1, 1000000, &n),
        VT_OPT_C("--method", "ibp|crown|alpha-crown|beta-crown", "the bounds (default crown); beta-crown: branch and\n"
                 "bound on ReLU splits, each subdomain bounded by alpha-CROWN with the splits'\n"
                 "beta multipliers (an MLP run's examples, or a VNN-LIB property of a feed-forward\n"
                 "ONNX file or MLP run; the certificate records the split tree, docs/certify.md\n"
                 "\"Branch and bound\")", &method),
        VT_OPT_U("--domains", "N", "beta-crown: at most N subdomains bounded per example (default 200)", 1, 1000000,
                 &domains),
        VT_OPT_S("--branching", "fsb|babsr", "beta-crown's choice of the ReLU to split: fsb (the default: the best\n"
                 "candidates of BaBSR's scores, each split both ways and estimated by one pass)\n"
                 "or babsr (the best score alone); not recorded: the check replays the tree", &branching),
        VT_OPT_U("--attack-restarts", "N", "the PGD attack's starts per wrong class: the example itself, then N - 1\n"
                 "random points of the ball (default 5; recorded in the certificate)", 1, 100000, &restarts),
        VT_OPT_U("--attack-iters", "N", "the PGD attack's steps from each start (default 50; recorded)", 1, 100000, &iters),
        VT_OPT_S("--intermediate", "crown|ibp", "a residual CNN's or convolutional ONNX file's pre-ReLU bounds for crown\n"
                                                "and alpha-crown: backward passes per neuron (crown, the default) or\n"
                                                "IBP's (ibp: CROWN-IBP, faster)", &inter),
        VT_OPT_S("--out", "CERT", "write the signed certificate (needs --key)", &o.out_path),
        VT_OPT_S("--key", "KEYFILE", "the certificate's signer", &o.key_path),
        VT_OPT_S("--report", "FILE.json", "a JSON report (\"-\": standard output)", &o.report_path),
        VT_OPT_S("--pubkey", "FILE", "the run's commitment must be signed by this key", &o.pubkey_path),
        VT_OPT_S("--signer", "FILE.pub", "check-certificate: the certificate must be signed by this key", &signer),
        VT_OPT_S("--data-dir", "DIR", VT_HELP_DATA_DIR, &o.data_root),
        VT_OPT_O("--order", "the order of the run's evaluation (default split)", &order),
        VT_OPT_S("--onnx", "NET.onnx", "an ONNX feed-forward ReLU or convolutional network instead of a run", &so.onnx_path),
        VT_OPT_S("--vnnlib", "PROP.vnnlib", "a VNN-LIB property: answered unsat / sat / unknown / timeout", &so.vnnlib_path),
        VT_OPT_S("--timeout", "SECONDS", "give up on a property (a run's example) after this long (answered\n"
                                         "timeout; no certificate is then written)", &timeout),
        VT_OPT_S("--cex", "FILE", "sat: write the counterexample here", &so.cex_path),
        VT_OPT_S("--result", "FILE", "VNN-COMP's result file: the answer line (unsat, sat, unknown, timeout),\n"
                                     "for sat followed by the counterexample's assignment", &so.result_path),
        VT_OPT_S("--write-vnnlib", "DIR", "write the run's properties as VNN-LIB files", &o.vnnlib_dir),
        VT_OPT_S("--instances", "instances.csv", "a VNN-COMP instance list: every line answered", &instances),
        VT_OPT_S("--shard", "tp|fsdp|none", "under mpirun -np N, the network split over the ranks (tp: each layer's\n"
                                            "rows, fsdp: each layer gathered when used; none: every rank whole, and\n"
                                            "beta-crown's subdomains split over the ranks), the same certificate\n"
                                            "for every N; rank 0 writes the output", &shard),
        VT_OPT_F("--quiet", "no progress lines", &o.quiet),
        VT_OPT_END};
    const vt_cli_cmd certify = {
        "auditor certify", "RUN_DIR --eps E --examples N [options] | --onnx NET.onnx --vnnlib PROP.vnnlib [options]\n"
        "       | RUN_DIR --vnnlib PROP.vnnlib [options] | --instances instances.csv [options]",
        "the L-infinity ball of radius E (clipped to [0, 1]) around each of the first N test examples of\n"
        "a committed MLP run: verified (sound bounds, rounding included), falsified (a counterexample\n"
        "confirmed by the project's evaluation) or unknown; --out writes the signed certificate. With\n"
        "--onnx / --vnnlib: a VNN-LIB property of an ONNX network (or of a committed MLP or residual CNN\n"
        "run), the VNN-COMP result line on standard output (docs/certify.md)",
        "split (the auditor's)", opts, NULL, 0, 1, 0,
        "exit status: 0 done, 2 cannot check or a malformed file, 64 usage error or an ONNX operator /\n"
        "VNN-LIB construct not supported"};
    const vt_cli_cmd checkc = {
        "auditor check-certificate", "CERT RUN_DIR [options] | CERT --onnx NET.onnx --vnnlib PROP.vnnlib [options]\n"
        "       | CERT RUN_DIR --vnnlib PROP.vnnlib [options]",
        "recompute a certificate in one pass (no search, no attack) and compare its bytes; a\n"
        "beta-crown certificate: every leaf of each split tree bounded from its recorded slopes and\n"
        "multipliers (a leaf that does not close, a missing branch or a changed value is rejected,\n"
        "naming the node)",
        "split (the auditor's)", opts, NULL, 1, 2, 1,
        "exit status: 0 the certificate holds, 2 cannot check, a mismatch or a malformed file, 64 usage"};
    vt_cli_args pa, *a = &pa;
    int st = vt_cli_parse(check ? &checkc : &certify, argc, argv, 2, a);
    if (st >= 0) return st;
    vt_cert_settings_default(&o.set, method == 0 ? VT_CERT_IBP : method == 1 ? VT_CERT_CROWN : VT_CERT_ALPHA_CROWN);
    if (method == 3) o.set.bab_domains = domains ? (uint32_t)domains : 200;
    if (domains && method != 3) return vt_cli_usage_error(NULL, "auditor: --domains: for --method beta-crown");
    o.order = (int)order, o.examples = (uint32_t)n;
    if (check && (restarts || iters))
        return vt_cli_usage_error(NULL, "auditor check-certificate: --attack-restarts, --attack-iters: the certificate "
                                        "records them (and a check runs no attack)");
    if (restarts) o.set.attack_restarts = (uint32_t)restarts; /* after --method (which resets the settings) */
    if (iters) o.set.attack_iters = (uint32_t)iters;
    if (branching) { /* after --method (which resets the settings) */
        if (check) return vt_cli_usage_error(NULL, "auditor check-certificate: --branching: the check replays the tree");
        if (method != 3) return vt_cli_usage_error(NULL, "auditor: --branching: for --method beta-crown");
        if (strcmp(branching, "fsb") && strcmp(branching, "babsr"))
            return vt_cli_usage_error(NULL, "auditor: --branching %s: expected fsb or babsr", branching);
        o.set.bab_branching = strcmp(branching, "fsb") ? VT_CERT_BRANCH_BABSR : VT_CERT_BRANCH_FSB;
    }
    if (inter) { /* after --method (which resets the settings) */
        if (check) return vt_cli_usage_error(NULL, "auditor check-certificate: --intermediate: the certificate records it");
        if (strcmp(inter, "crown") && strcmp(inter, "ibp"))
            return vt_cli_usage_error(NULL, "auditor: --intermediate %s: expected crown or ibp", inter);
        if (o.set.method == VT_CERT_IBP)
            return vt_cli_usage_error(NULL, "auditor: --intermediate: for --method crown or alpha-crown (IBP has none)");
        o.set.inter = strcmp(inter, "ibp") ? VT_CERT_INTER_CROWN : VT_CERT_INTER_IBP;
    }
    /* an option the mode does not use is refused, never ignored */
    const char *unused = NULL;
    const int spec = so.onnx_path || so.vnnlib_path || instances;
    if (check) {
        unused = eps ? "--eps" : n ? "--examples" : method != 1 ? "--method" : o.out_path ? "--out" : o.key_path ? "--key"
               : !spec && o.report_path ? "--report" : !spec && timeout ? "--timeout" : !spec && so.cex_path ? "--cex"
               : so.result_path ? "--result" : NULL;
        if (unused)
            return vt_cli_usage_error(NULL, "auditor check-certificate: %s: for certify (the certificate records what "
                                            "check-certificate needs)", unused);
    } else {
        unused = signer ? "--signer" : !spec && so.cex_path ? "--cex" : !spec && so.result_path ? "--result" : NULL;
        if (unused)
            return vt_cli_usage_error(NULL, "auditor certify: %s: %s", unused,
                                      signer ? "for check-certificate" : "for a VNN-LIB property (--vnnlib, --onnx, --instances)");
    }
    if (check || (o.report_path && !strcmp(o.report_path, "-"))) o.quiet = 1;
    if (shard && method == 3 && strcmp(shard, "none"))
        return vt_cli_usage_error(NULL, "auditor certify: --method beta-crown: with --shard none only (its subdomains "
                                        "over the ranks), not yet with the network sharded");
    if (shard && !g_cert_comm) return cmd_certify_sharded(argc, argv, check, shard, timeout, instances);
    if (g_cert_comm && vt_dist_rank(g_cert_comm) != 0) { /* --shard: rank 0 writes for all */
        o.quiet = 1, o.out_path = NULL, o.report_path = NULL, o.vnnlib_dir = NULL;
        if (so.cex_path) so.cex_path = "/dev/null"; /* writing it evaluates the network: a collective */
        if (so.result_path) so.result_path = "/dev/null";
    }
    if (so.onnx_path || so.vnnlib_path || instances)
        return cmd_certify_spec(a, check, &o, &so, timeout, eps, n, signer, instances);
    if (check) {
        if (a->n != 2) return vt_cli_usage_error(NULL, "auditor check-certificate: CERT RUN_DIR expected");
        o.run_dir = a->v[1];
        vt_err e = vt_cert_check(a->v[0], &o, signer);
        if (e) {
            fprintf(stderr, "auditor check-certificate: %s\n", vt_errmsg());
            return vt_cli_exit_for_input(e);
        }
        printf("certificate %s: recomputed from %s, the same bytes; signature valid\n", a->v[0], o.run_dir);
        return VT_EXIT_OK;
    }
    if (a->n != 1) return vt_cli_usage_error(NULL, "auditor certify: RUN_DIR expected");
    o.run_dir = a->v[0];
    char *end = NULL;
    o.eps = eps ? strtod(eps, &end) : -1;
    if (!eps || !end || *end || !(o.eps >= 0 && o.eps <= 1))
        return vt_cli_usage_error(NULL, "auditor certify: --eps E in [0, 1] is required");
    if (!n) return vt_cli_usage_error(NULL, "auditor certify: --examples N is required");
    if (o.out_path && !o.key_path) return vt_cli_usage_error(NULL, "auditor certify: --out needs --key KEYFILE");
    if (timeout) {
        end = NULL;
        o.timeout = strtod(timeout, &end);
        if (!end || *end || !(o.timeout > 0 && o.timeout < 1e9))
            return vt_cli_usage_error(NULL, "auditor certify: --timeout SECONDS: a positive number");
    }
    vt_cert_result r;
    vt_err e = vt_cert_run(&o, &r);
    if (e) {
        fprintf(stderr, "auditor certify: %s\n", vt_errmsg());
        return e == VT_ERR_ARG || e == VT_ERR_UNSUPPORTED ? VT_EXIT_USAGE : vt_cli_exit_for_input(e);
    }
    int wrote = o.out_path && !r.timeout;
    char tmo[32] = "";
    if (r.timeout) snprintf(tmo, sizeof tmo, ", %u timeout", r.timeout);
    if (!o.quiet || o.out_path)
        printf("%s eps %.17g: %u verified, %u falsified, %u unknown%s of %u (verified accuracy %.1f%%)%s%s\n",
               o.set.bab_domains ? "beta-crown" : vt_cert_method_name(o.set.method), o.eps, r.verified, r.falsified, r.unknown,
               tmo, o.examples,
               r.verified + r.falsified + r.unknown + r.timeout
                   ? 100.0 * r.verified / (r.verified + r.falsified + r.unknown + r.timeout) : 0.0,
               wrote ? "; certificate " : "", wrote ? o.out_path : "");
    if (r.timeout)
        fprintf(stderr, "auditor certify: %u example%s timed out%s\n", r.timeout, r.timeout == 1 ? "" : "s",
                o.out_path ? ": no certificate written" : "");
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
        return vt_cli_usage_error(NULL, "auditor: --shard %s: expected tp, fsdp or none", shard);
    if (timeout || instances)
        return vt_cli_usage_error(NULL, "auditor: --shard: not with --timeout or --instances (the ranks would "
                                              "not stop together)");
    if (vt_dist_init(&g_cert_comm)) {
        fprintf(stderr, "auditor: %s\n", vt_errmsg());
        return VT_EXIT_CANNOT;
    }
    vt_cert_set_shard(g_cert_comm, m);
    if (m == VT_CERT_SHARD_NONE) vt_cert_set_bab_comm(g_cert_comm); /* beta-crown: subdomains over the ranks */
    if (vt_dist_rank(g_cert_comm) != 0 && !freopen("/dev/null", "w", stdout)) {
        fprintf(stderr, "auditor: cannot silence rank %d's standard output\n", vt_dist_rank(g_cert_comm));
        (void)vt_cert_shard_fail(vt_set_error(VT_ERR_IO, "cannot silence rank %d", vt_dist_rank(g_cert_comm)));
        (void)vt_dist_finalize(&g_cert_comm);
        return VT_EXIT_CANNOT;
    }
    int st = cmd_certify(argc, argv, check);
    if (st != VT_EXIT_OK) (void)vt_cert_shard_fail(st == VT_EXIT_USAGE ? VT_ERR_ARG : VT_ERR_IO);
    vt_cert_set_bab_comm(NULL);
    (void)vt_dist_finalize(&g_cert_comm);
    return st;
}


int auditor_certify(int argc, char **argv) { return cmd_certify(argc, argv, 0); }
int auditor_check_certificate(int argc, char **argv) { return cmd_certify(argc, argv, 1); }
