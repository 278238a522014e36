/* trainer export / report: a committed run's state written out (safetensors, ONNX), or the run
 * as one HTML page. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_hash.h"
#include "../merkle/vt_sign.h"
#include "../run/vt_export.h"
#include "../run/vt_report.h"
#include "trainer.h"

int trainer_export(int argc, char **argv)
{
    vt_export_opts o;
    memset(&o, 0, sizeof o);
    const char *format = "safetensors", *layout = "project";
    uint64_t max_memory = 0;
    o.step = UINT64_MAX; /* not given: the last committed step */
    const vt_cli_opt opts[] = {
        VT_OPT_S("--format", "safetensors|onnx",
                 "safetensors (default) or onnx: the model's inference graph (MLP, residual CNN,\n"
                 "GPT) with those weights, the run's hashes and recipe as metadata (a GPT's\n"
                 "vocabulary too: --data-dir) (docs/format.md); a trainer built without ONNX\n"
                 "support exits 2", &format),
        VT_OPT_S("--out", "FILE", "where to write it (required)", &o.out_path),
        VT_OPT_U("--step", "S", "a checkpointed committed step (0: the initial state; default: the last)", 0,
                 UINT64_MAX - 1, &o.step),
        VT_OPT_S("--pubkey", "FILE.pub", "the trainer's public key the commitment must be signed with (without\n"
                                         "it: a warning, the key inside the commitment is trusted)", &o.pubkey_path),
        VT_OPT_F("--optimizer", "add the optimiser's state", &o.with_optimizer),
        VT_OPT_S("--layout", "project|torch",
                 "project (default) or torch: a PyTorch state_dict (nn.Linear [out, in], nn.Conv2d\n"
                 "[C_out, C_in, k, k], num_batches_tracked; the optimiser's state under optimizer.*)\n"
                 "with the architecture, the recipe and a GPT's vocabulary in the metadata", &layout),
        VT_OPT_S("--data-dir", "DIR", "dataset root: a GPT's vocabulary (from its data set)", &o.data_root),
        VT_OPT_Z("--max-memory", VT_HELP_MAX_MEMORY, &max_memory),
        VT_OPT_END};
    const vt_cli_cmd cmd = {
        "trainer export", "RUN_DIR --out FILE [options]",
        "write the parameters (and buffers) of the last, or a checkpointed committed, step with their\n"
        "names, shapes and dtypes, after checking the commitment's signature, its root over the run's\n"
        "leaves and the step's state hash",
        NULL, opts, NULL, 0, 1, 0, NULL};
    vt_cli_args a;
    int st = vt_cli_parse(&cmd, argc, argv, 2, &a);
    if (st >= 0) return st;
    if (o.step != UINT64_MAX) o.has_step = 1;
    else o.step = 0;
    if (strcmp(format, "onnx") == 0)
        o.format = VT_EXPORT_ONNX;
    else if (strcmp(format, "safetensors") != 0)
        return vt_cli_usage_error(NULL, "trainer export: --format %s: the formats are safetensors and onnx", format);
    if (strcmp(layout, "torch") == 0)
        o.layout = VT_LAYOUT_TORCH;
    else if (strcmp(layout, "project") != 0)
        return vt_cli_usage_error(NULL, "trainer export: --layout %s: the layouts are project (the default) and torch",
                                  layout);
    if (a.n != 1 || !o.out_path)
        return vt_cli_usage_error(NULL, "trainer export: RUN_DIR and --out FILE are required");
    o.run_dir = a.v[0];
    vt_model_set_memory_budget(max_memory, VT_ERR_LIMIT); /* the run's manifest is not ours: exit 2 */
    vt_export_result r;
    vt_err e = vt_export_run(&o, &r);
    if (e) {
        fprintf(stderr, "trainer export: %s\n", vt_errmsg());
        /* the run contradicts its commitment: rejected (1); --step not a committed state: usage
         * (64); a damaged or incomplete run, I/O: cannot (2) */
        return e == VT_ERR_MISMATCH ? VT_EXIT_REJECTED : vt_cli_exit_for(e);
    }
    if (!o.pubkey_path) {
        char pk[65];
        vt_hex(r.public_key, 32, pk);
        fprintf(stderr,
                "trainer export: warning: no --pubkey: the signature was checked against the key inside the "
                "commitment (%s), which anyone can put there; pass --pubkey FILE.pub to check that the trainer "
                "you trust signed it\n",
                pk);
    }
    char hs[65];
    vt_hex(r.state_hash, 32, hs);
    if (o.format == VT_EXPORT_ONNX)
        printf("exported step %llu as ONNX (the inference graph; %u state tensors, %llu bytes), state hash %s "
               "(verified against the commitment) -> %s\n",
               (unsigned long long)r.step, r.tensors, (unsigned long long)r.bytes, hs, o.out_path);
    else
        printf("exported step %llu: %u tensors, %llu bytes, state hash %s (verified against the commitment) -> %s\n",
               (unsigned long long)r.step, r.tensors, (unsigned long long)r.bytes, hs, o.out_path);
    return VT_EXIT_OK;
}

/* --audit FILE.json: repeatable, each kept */
typedef struct {
    const char **v;
    size_t n;
} audit_list;

static vt_err opt_audit(void *p, const char *v)
{
    audit_list *l = p;
    l->v[l->n++] = v;
    return VT_OK;
}

/* trainer report RUN_DIR --out FILE: run/vt_report.h */
int trainer_report(int argc, char **argv)
{
    vt_report_opts o;
    memset(&o, 0, sizeof o);
    uint64_t max_memory = 0;
    const char **audits = calloc((size_t)argc + 1, sizeof *audits);
    if (!audits) return VT_EXIT_CANNOT;
    audit_list al = {audits, 0};
    const vt_cli_opt opts[] = {
        VT_OPT_S("--out", "FILE.html", "where to write the page (required; - : standard output)", &o.out_path),
        VT_OPT_S("--pubkey", "FILE.pub", "the trainer's public key the commitment must be signed with", &o.pubkey_path),
        VT_OPT_FN_("--audit", "FILE.json", "an audit report (`auditor verify --report`) to show (repeatable)",
                   opt_audit, &al),
        VT_OPT_F("--no-search", "show only the --audit reports, not those in RUN_DIR and beside it", &o.no_search),
        VT_OPT_S("--data-dir", "DIR", "dataset root of the evaluation figure (default: $VT_DATA_DIR or the\n"
                                      "repository's data/)", &o.data_root),
        VT_OPT_F("--no-eval", "no evaluation figure (the last checkpoint is not evaluated)", &o.no_eval),
        VT_OPT_Z("--max-memory", "the evaluation's memory budget (default: the available memory)", &max_memory),
        VT_OPT_END};
    const vt_cli_cmd cmd = {
        "trainer report", "RUN_DIR --out FILE.html [--pubkey FILE.pub] [--audit FILE.json]... [--no-search]",
        "one self-contained HTML page (no script, loads nothing): loss, learning-rate and log-entry\n"
        "curves, the evaluation figure (`trainer eval`'s default on the last checkpoint), checkpoints, the Merkle\n"
        "root and the commitment's signature, the audit reports in RUN_DIR and beside it\n"
        "(RUN_DIR.*.json) and those named with --audit (docs/report.md); what the run lacks is said on\n"
        "the page",
        NULL, opts, NULL, 0, 1, 0, NULL};
    vt_cli_args a;
    int st = vt_cli_parse(&cmd, argc, argv, 2, &a);
    if (st >= 0 || a.n != 1 || !o.out_path) {
        free(audits);
        if (st < 0) fprintf(stderr, "trainer report: RUN_DIR and --out FILE are required\n");
        return st >= 0 ? st : VT_EXIT_USAGE;
    }
    o.run_dir = a.v[0];
    o.audit_paths = audits, o.n_audit_paths = al.n;
    if (o.pubkey_path) { /* the user's own key file: unreadable is a refusal, not a finding about the run */
        uint8_t pk[32];
        vt_err ke = vt_sign_read_public_key(o.pubkey_path, pk);
        if (ke) {
            free(audits);
            fprintf(stderr, "trainer report: --pubkey: %s\n", vt_errmsg());
            return vt_cli_exit_for_input(ke);
        }
    }
    vt_model_set_memory_budget(max_memory, VT_ERR_LIMIT); /* the run's manifest is not ours */
    vt_report_result r;
    vt_err e = vt_report_write(&o, &r);
    free(audits);
    if (e) {
        fprintf(stderr, "trainer report: %s\n", vt_errmsg());
        return vt_cli_exit_for_input(e); /* the run is the input: 2 */
    }
    if (strcmp(o.out_path, "-") != 0)
        printf("report of %s (%llu steps, %s, %zu audit report%s, %zu thing%s missing) -> %s\n", o.run_dir,
               (unsigned long long)(r.steps ? r.steps - 1 : 0),
               !r.committed      ? "no commitment"
               : r.signature_ok && r.root_ok ? "signature valid, root matches"
                                             : "the commitment does NOT verify",
               r.audits, r.audits == 1 ? "" : "s", r.problems, r.problems == 1 ? "" : "s", o.out_path);
    return VT_EXIT_OK;
}
