/* auditor verify RUN_DIR: replay a committed run in the auditor's order and give the verdict. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dist/vt_dist.h"
#include "../model/vt_model.h"
#include "../run/vt_audit.h"
#include "auditor.h"

/* With several replay threads, keep each BLAS call single-threaded (OpenBLAS only). */
static void blas_threads(int n)
{
    void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
    if (set) set(n);
}

int auditor_verify(int argc, char **argv)
{
    vt_audit_opts o;
    uint64_t max_memory = 0;
    memset(&o, 0, sizeof o);
    o.order = VT_ORDER_SPLIT;
    o.jobs = 1;
    const char *report = NULL;
    int backend = 0;
    const vt_cli_opt opts[] = {
        VT_OPT_O("--order", "the auditor's evaluation order (default split: the BLAS on each half of every\n"
                            "reduction)", &o.order),
        VT_OPT_S("--recipe", "FILE", "also check that the run used exactly this recipe", &o.recipe_path),
        VT_OPT_S("--pubkey", "FILE", "also check that the commitment is signed by this key (KEYFILE.pub)",
                 &o.pubkey_path),
        VT_OPT_S("--data-dir", "DIR", VT_HELP_DATA_DIR, &o.data_root),
        VT_OPT_S("--init", "FILE", "a run trained with --init: check that it started from FILE (default: the\n"
                                   "run directory's copy, init.safetensors, checked against the manifest)",
                 &o.init_path),
        VT_OPT_S("--model", "NET.onnx", "the client's own model (trainer train --model): check that the run\n"
                                        "trains exactly its graph, from its initializers (unless --init)",
                 &o.model_path),
        VT_OPT_C("--backend", "cpu|cuda", "cpu (default) or cuda: replay the GEMMs on the GPU (docs/cuda.md)",
                 &backend),
        VT_OPT_U("--from", "S", "audit steps S+1.. only, starting from the checkpoint at S (default 0)", 0,
                 (uint64_t)INT64_MAX, &o.from),
        VT_OPT_U("--to", "E", "audit up to step E only (default: the last)", 1, (uint64_t)INT64_MAX, &o.to),
        VT_OPT_I("--jobs", "N", "replay N segments (split at checkpoints) in parallel (default 1; reduced to\n"
                                "what the memory budget holds); under mpirun -np M: M x N segments split\n"
                                "over the M ranks, the verdict and report of one process",
                 1, 256, &o.jobs),
        VT_OPT_Z("--max-memory", "the memory budget, e.g. 8G (default: the available memory): a run whose\n"
                                 "model needs more cannot be checked (exit 2), before anything is allocated",
                 &max_memory),
        VT_OPT_S("--report", "FILE", "write a JSON report (\"-\": standard output)", &report),
        VT_OPT_F("--quiet", "no progress line", &o.quiet),
        VT_OPT_END};
    const vt_cli_cmd cmd = {
        "auditor verify", "RUN_DIR [options]",
        "replay a committed run in the auditor's own evaluation order, bit for bit, and check it against\n"
        "its commitment: VERIFIED (complete: every step, log and promised checkpoint), REJECTED (naming\n"
        "the step) or CANNOT CHECK",
        "split (the auditor's; the trainer's default is blas)", opts, NULL, 1, 1, 0,
        "exit status: 0 verified, 1 rejected, 2 cannot check, 64 usage error, 70 internal failure"};
    vt_cli_args a;
    int st0 = vt_cli_parse(&cmd, argc, argv, 2, &a);
    if (st0 >= 0) return st0;
    o.run_dir = a.v[0];
    o.backend = backend ? "cuda" : NULL;
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
