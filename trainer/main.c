/* trainer - trains a recipe verifiably and commits to every step.
 *
 *   trainer keygen KEYFILE [--force]
 *   trainer train --run DIR --key KEYFILE [--recipe FILE] [--set key=value]... [--order ORDER] [--init FILE]
 *                 [--data-dir DIR] [--resume] [--quiet]
 *   mpirun -np N trainer train ...   (data-parallel: the batch split across N ranks, docs/distributed.md)
 *   trainer plain [--recipe FILE] [--set key=value]... --precision fp32|fp64 [--steps N]
 *                 (benchmark baseline only: not verifiable)
 *   trainer eval --run DIR [--dataset SPEC] [--data-dir DIR]
 *
 * Exit status (README.md "Exit statuses"): 0 success, 1 training diverged, 2 unreadable, corrupt or
 * hostile input / I/O error, 64 usage or recipe error, 70 internal failure.
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
#include "../dist/vt_dist.h"
#include "../merkle/vt_sign.h"
#include "../model/vt_model.h"
#include "../model/vt_plain.h"
#include "../protocol/vt_proto.h"
#include "../store/vt_store.h"
#include "../game/vt_serve.h"
#include "../run/vt_export.h"
#include "../run/vt_report.h"
#include "../run/vt_init.h"
#include "../run/vt_train.h"
#ifdef VT_TEST_HOOKS
#include <signal.h>

#include "../tests/tools/vt_cheats.h"
static vt_cheats g_cheats; /* the test build's adversaries (tests/vt_cheats.h) */

/* --kill-at / --pause-at POINT[:N]: at the N-th pass (default the first) of the run directory's
 * write point POINT (docs/format.md "Run directory") the process kills itself with SIGKILL (a
 * crash) or stops with SIGSTOP (for a test to act meanwhile, then SIGCONT); --fault-trace prints
 * "write point POINT N" on stderr at every pass. */
static struct {
    char name[64];
    uint64_t n;
    int sig, trace, n_seen;
    struct {
        char name[64];
        uint64_t count;
    } seen[64];
} g_fault;

static void fault_hook(const char *point)
{
    int i = 0;
    while (i < g_fault.n_seen && strcmp(g_fault.seen[i].name, point) != 0) i++;
    if (i == g_fault.n_seen && i < 64) snprintf(g_fault.seen[g_fault.n_seen++].name, 64, "%s", point);
    uint64_t count = i < 64 ? ++g_fault.seen[i].count : 0;
    if (g_fault.trace) fprintf(stderr, "write point %s %llu\n", point, (unsigned long long)count);
    if (g_fault.sig && strcmp(point, g_fault.name) == 0 && count == g_fault.n) {
        fflush(NULL);
        raise(g_fault.sig);
    }
}

static int fault_parse(const char *arg, int sig)
{
    const char *colon = strchr(arg, ':');
    size_t len = colon ? (size_t)(colon - arg) : strlen(arg);
    g_fault.n = 1;
    if (len == 0 || len >= sizeof g_fault.name ||
        (colon && vt_cli_u64("--kill-at / --pause-at N", colon + 1, 1, UINT64_MAX, &g_fault.n) != VT_OK)) {
        fprintf(stderr, "trainer: --kill-at / --pause-at %s: expected POINT[:N]\n", arg);
        return -1;
    }
    memcpy(g_fault.name, arg, len);
    g_fault.name[len] = 0;
    g_fault.sig = sig;
    vt_store_set_fault_hook(fault_hook);
    return 0;
}

/* --flip-state R:S / --kill-rank R:S (data-parallel runs, tests/dp.sh): after step S, rank R (0: the
 * one process) flips the lowest bit of its state's first value (a rank whose state no longer is the
 * others') or kills itself with SIGKILL (a rank lost mid-run). */
static struct {
    int kill;
    uint64_t rank, step;
    vt_hooks hooks;
} g_rankf;

static vt_err rank_fault_hook(void *ctx, vt_model *m, uint64_t step, uint32_t op_id)
{
    (void)ctx;
    int rank = m->shard ? vt_dist_rank(m->shard->comm) : 0;
    if (step != g_rankf.step || op_id != m->n_ops || (uint64_t)rank != g_rankf.rank) return VT_OK;
    if (g_rankf.kill) {
        fflush(NULL);
        raise(SIGKILL);
    }
    uint32_t b;
    memcpy(&b, &m->state[0], 4);
    b ^= 1u;
    memcpy(&m->state[0], &b, 4);
    return VT_OK;
}

static int rank_fault_parse(const char *opt, const char *arg, int kill)
{
    const char *colon = strchr(arg, ':');
    char r[32];
    if (!colon || (size_t)(colon - arg) >= sizeof r) {
        fprintf(stderr, "trainer: %s %s: expected RANK:STEP\n", opt, arg);
        return -1;
    }
    memcpy(r, arg, (size_t)(colon - arg));
    r[colon - arg] = 0;
    if (vt_cli_u64(opt, r, 0, 1u << 20, &g_rankf.rank) != VT_OK ||
        vt_cli_u64(opt, colon + 1, 1, UINT64_MAX, &g_rankf.step) != VT_OK) {
        fprintf(stderr, "trainer: %s\n", vt_errmsg());
        return -1;
    }
    g_rankf.kill = kill;
    g_rankf.hooks.after_op = rank_fault_hook;
    return 0;
}
#endif

/* --max-memory (0: the available memory): the model's allocation is refused beyond it */
#define VT_OPT_MAX_MEMORY 1001 /* a long option only */
static uint64_t g_max_memory;

static void usage(FILE *f)
{
    fprintf(f,
            "usage:\n"
            "  trainer keygen KEYFILE [--force]\n"
            "      write an Ed25519 key pair: KEYFILE (secret, mode 0600) and KEYFILE.pub\n"
            "  trainer train --run DIR --key KEYFILE [options]\n"
            "      --recipe FILE     JSON recipe (default: the built-in MNIST MLP recipe)\n"
            "      --set KEY=VALUE   override one recipe key (repeatable), e.g. --set steps=100\n"
            "      --order ORDER     evaluation order: blas (default), split, forward, reverse,\n"
            "                        pairwise, permuted, sorted\n"
            "      --data-dir DIR    dataset root (default: $VT_DATA_DIR or the repository's data/); a\n"
            "                        relative path in dataset=safetensors:PATH, npy:X.npy,Y.npy, text:PATH\n"
            "                        or file:PATH is taken from it (else from the current directory)\n"
            "      --init FILE       the initial state from a safetensors file (`trainer export`'s names and\n"
            "                        shapes, F32); its SHA-256 goes into the manifest, the run keeps a copy\n"
            "      --init-layout L   the file's layout: project (`trainer export`), torch (a PyTorch state_dict,\n"
            "                        `export --layout torch`'s names and shapes) or auto (default: torch when its\n"
            "                        metadata says vt.layout torch); recorded in the manifest\n"
            "      --backend NAME    cpu (default) or cuda: the GEMMs and their rounding on the GPU\n"
            "                        (the same bits; docs/cuda.md)\n"
            "      --resume          continue an interrupted run from its newest usable checkpoint\n"
            "      --reader-wait S   how long the end of training waits for readers holding an older\n"
            "                        snapshot of run.db before it fails uncommitted (default 60)\n"
            "      --max-memory SIZE the model's memory budget, e.g. 8G (default: the available memory); a\n"
            "                        recipe that needs more is refused before anything is written\n"
            "      --quiet           no progress line\n"
            "      under `mpirun -np N`: data-parallel on N ranks, the batch (a multiple of N) split across\n"
            "      them, rank 0 writing the run: the one-process commitment (docs/distributed.md)\n"
            "      --shard-state     with N ranks: each holds and updates 1/N of the optimiser state and\n"
            "                        of the parameters (allgathered after each step); the same commitment\n"
#ifdef VT_TEST_HOOKS
            "      --stop-after S    TEST BUILD: stop after step S without committing (as a crash would)\n"
            "      --kill-at P[:N]   TEST BUILD: SIGKILL at the N-th pass of write point P (docs/format.md)\n"
            "      --pause-at P[:N]  TEST BUILD: SIGSTOP there instead; --fault-trace: print every point\n"
            "      --cheat KIND:S[:V] TEST BUILD: a cheating trainer (tests/vt_cheats.h)\n"
            "      --flip-state R:S  TEST BUILD: rank R flips a bit of its state after step S\n"
            "      --kill-rank R:S   TEST BUILD: rank R kills itself (SIGKILL) after step S\n"
#endif
            "  trainer recipe [--recipe FILE] [--set KEY=VALUE]... [--program]\n"
            "      print the effective recipe (JSON), or with --program its step program: the tensor\n"
            "      table and the operations with their ids (docs/format.md)\n"
            "  trainer export RUN_DIR --format safetensors|onnx --out FILE [--step S (0: the initial state)]\n"
            "                 [--pubkey FILE.pub] [--optimizer] [--layout project|torch] [--data-dir DIR]\n"
            "      write the parameters (and buffers) of the last, or a checkpointed committed, step with\n"
            "      their names, shapes and dtypes, after checking the commitment's signature, its root over\n"
            "      the run's leaves and the step's state hash; --optimizer adds the optimiser's state;\n"
            "      --layout torch: a PyTorch state_dict (nn.Linear [out, in], nn.Conv2d [C_out, C_in, k, k],\n"
            "      num_batches_tracked; the optimiser's state under optimizer.*) with the architecture,\n"
            "      the recipe and a GPT's vocabulary (from its data set: --data-dir) in the metadata;\n"
            "      --format onnx: the model's inference graph (MLP, residual CNN; not the GPT: exit 64)\n"
            "      with those weights, the run's hashes and recipe as metadata (docs/format.md); a trainer\n"
            "      built without ONNX support (libonnx-dev, protobuf-c) exits 2\n"
            "  trainer report RUN_DIR --out FILE.html [--pubkey FILE.pub] [--audit FILE.json]... [--no-search]\n"
            "      one self-contained HTML page (no script, loads nothing): loss, learning-rate and log-entry\n"
            "      curves, checkpoints, the Merkle root and the commitment's signature, the audit reports in\n"
            "      RUN_DIR and beside it (RUN_DIR.*.json) and those named with --audit (docs/report.md);\n"
            "      what the run lacks is said on the page; --out - writes it to standard output\n"
            "  trainer serve RUN_DIR --listen HOST:PORT --key KEYFILE --arbiter-key FILE.pub... [options]\n"
            "      answer the named arbiters' questions about the committed run (dispute game, TLS 1.3);\n"
            "      signs RUN_DIR/service.vtsr, the record that tells arbiters where, until when and to\n"
            "      which arbiters the trainer answers (re-signed while serving, before it expires)\n"
            "      --arbiter-key FILE.pub  an arbiter to answer (repeatable, 1 to 16; anyone else gets an\n"
            "                        ERROR); the record names them: no other arbiter can judge this run\n"
            "      --advertise HOST:PORT   the address to sign (default: the --listen host, bound port)\n"
            "      --service-file FILE     where to write the record (default RUN_DIR/service.vtsr)\n"
            "      --record-ttl SECONDS    the record's lifetime (default 604800, 7 days; at least 1200, twice\n"
            "                        the 600 s floor arbiters check): until then the trainer answers\n"
            "                        about this run at its address; re-signed when half is left\n"
            "      --order ORDER, --data-dir DIR   as for train (the run's order)\n"
            "      --max-sessions N        sessions at once, all arbiters (default 16, at most 128)\n"
            "      --sessions-per-arbiter N  of those, per arbiter key (default 8); at a limit the oldest\n"
            "                        idle session of that arbiter (or of the busiest one) is closed\n"
            "      --idle-ms N             close a session silent this long (default 60000)\n"
            "      --max-recompute-steps N steps one game may make the trainer recompute; each arbiter key\n"
            "                        has a bucket of 4 such budgets, refilled one a minute (default:\n"
            "                        8 x checkpoint_every + 4 x the committed-state gap + 16)\n"
            "      --chain-cache N         segment chains cached for all sessions (default 4, 0..64)\n"
            "      --handshake-ms N        TLS handshake deadline (default 3000)\n"
            "      --max-pending N         connections not yet authenticated (default 64)\n"
            "      --pending-per-ip N      of those, from one IP address (default 16)\n"
            "      --port-file FILE, --connections N, --quiet   tests: port, stop after N sessions\n"
            "  trainer plain --precision fp32|fp64 [--recipe FILE] [--set KEY=VALUE]... [--steps N]\n"
            "                [--data-dir DIR]\n"
            "      BENCHMARK BASELINE ONLY: train the same recipe with a plain FP32 or FP64 step (no\n"
            "      rounding layer, no log, no commitment, not reproducible); prints steps/s and loss\n"
            "  trainer eval --run DIR [--dataset SPEC] [--data-dir DIR] [--per-example FILE]\n"
            "      accuracy of a run's last checkpoint on SPEC (default: mnist-test for MNIST runs,\n"
            "      cifar10-test for CIFAR-10 runs, the training set otherwise; SPEC is NAME or NAME:N);\n"
            "      --per-example FILE: each example's index, label and predicted class, a line each;\n"
            "      for a text model (arch=gpt) the validation loss in nats per character\n"
            "      (default: shakespeare-val)\n"
            "  trainer sample RUN_DIR [--tokens N] [--seed S] [--prompt TEXT] [--data-dir DIR]\n"
            "      N characters (default 200) generated by a text model's last checkpoint after TEXT\n"
            "      (default a newline): exact rounding and Philox draws, the same text everywhere\n"
            "  export, eval and sample also take --max-memory SIZE (a run that needs more: exit 2)\n"
            "  every command takes --threads N: the threads its loops and BLAS use (default: VT_THREADS,\n"
            "      else the CPUs shared among mpirun's ranks on the machine); exact rounding's bits do not\n"
            "      depend on it\n"
            "exit status: 0 ok, 1 training diverged, 2 unreadable/corrupt/hostile input or I/O error,\n"
            "             64 usage or recipe error, 70 internal failure\n");
}

/* Parses the options shared by train and recipe into rc and o. Returns -1 on success or an
 * exit status. */
static int parse_train(int argc, char **argv, vt_recipe *rc, vt_train_opts *o)
{
    static const struct option lo[] = {
        {"run", required_argument, 0, 'r'},    {"key", required_argument, 0, 'k'},
        {"recipe", required_argument, 0, 'R'}, {"set", required_argument, 0, 's'},
        {"order", required_argument, 0, 'o'},  {"data-dir", required_argument, 0, 'd'},
        {"resume", no_argument, 0, 'u'},       {"quiet", no_argument, 0, 'q'},
        {"backend", required_argument, 0, 'b'}, {"help", no_argument, 0, 'h'},
        {"max-memory", required_argument, 0, VT_OPT_MAX_MEMORY},
        {"reader-wait", required_argument, 0, 'W'}, {"init", required_argument, 0, 'I'},
        {"init-layout", required_argument, 0, 'L'}, {"shard-state", no_argument, 0, 'Z'},
#ifdef VT_TEST_HOOKS
        {"stop-after", required_argument, 0, 'S'}, {"cheat", required_argument, 0, 'C'},
        {"kill-at", required_argument, 0, 'K'}, {"pause-at", required_argument, 0, 'P'},
        {"fault-trace", no_argument, 0, 'T'}, {"flip-state", required_argument, 0, 'F'},
        {"kill-rank", required_argument, 0, 'X'},
#endif
        {0, 0, 0, 0}};
    const vt_cli_opt opts[] = {VT_CLI_ORDER('o', "--order", &o->order),
                               VT_CLI_INT('W', "--reader-wait", 1, 86400, &o->reader_wait_s), VT_CLI_END};
    vt_recipe_default(rc);
    memset(o, 0, sizeof *o);
    o->order = VT_ORDER_BLAS;
    /* the recipe file first, overrides after, whatever their order on the command line */
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        vt_err re = c == 'R' ? vt_recipe_load_file(rc, optarg) : VT_OK;
        if (re) { /* the user's recipe: 64, as a --set would be */
            fprintf(stderr, "trainer: %s\n", vt_errmsg());
            return vt_cli_exit_for(re);
        }
        if (c == '?') return vt_cli_usage_error(usage, NULL);
    }
    optind = 2;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'r': o->run_dir = optarg; break;
        case 'k': o->key_path = optarg; break;
        case 'd': o->data_root = optarg; break;
        case 'I': o->init_path = optarg; break;
        case 'L':
            if (strcmp(optarg, "torch") && strcmp(optarg, "project") && strcmp(optarg, "auto"))
                return vt_cli_usage_error(usage, "trainer train: --init-layout %s: expected torch, project or auto",
                                          optarg);
            o->init_layout = !strcmp(optarg, "torch") ? VT_INIT_TORCH : !strcmp(optarg, "project") ? VT_INIT_PROJECT
                                                                                                   : VT_INIT_AUTO;
            break;
        case 'u': o->resume = 1; break;
        case 'q': o->quiet = 1; break;
        case 'Z': o->shard_state = 1; break;
        case 'b':
            if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda"))
                return vt_cli_usage_error(usage, "trainer: --backend %s: expected cpu or cuda", optarg);
            o->backend = optarg;
            break;
#ifdef VT_TEST_HOOKS
        case 'S':
            if (vt_cli_u64("--stop-after", optarg, 1, UINT64_MAX, &o->stop_after) != VT_OK) {
                fprintf(stderr, "trainer: %s\n", vt_errmsg());
                return VT_EXIT_USAGE;
            }
            break;
        case 'C':
            if (vt_cheats_parse(&g_cheats, optarg) != VT_OK) {
                fprintf(stderr, "trainer: %s\n", vt_errmsg());
                return VT_EXIT_USAGE;
            }
            o->hooks = &g_cheats.hooks;
            break;
        case 'K':
        case 'P':
            if (fault_parse(optarg, c == 'K' ? SIGKILL : SIGSTOP)) return VT_EXIT_USAGE;
            break;
        case 'T':
            g_fault.trace = 1;
            vt_store_set_fault_hook(fault_hook);
            break;
        case 'F':
        case 'X':
            if (rank_fault_parse(c == 'F' ? "--flip-state" : "--kill-rank", optarg, c == 'X')) return VT_EXIT_USAGE;
            break;
#endif
        case 'h': usage(stdout); return VT_EXIT_OK;
        case 's':
            if (vt_recipe_set(rc, optarg) != VT_OK) {
                fprintf(stderr, "trainer: --set %s: %s\n", optarg, vt_errmsg());
                return VT_EXIT_USAGE;
            }
            break;
        case 'R': break; /* loaded above */
        case VT_OPT_MAX_MEMORY:
            if (vt_cli_size("--max-memory", optarg, &g_max_memory) != VT_OK)
                return vt_cli_usage_error(usage, "trainer: %s", vt_errmsg());
            break;
        default:
            if (vt_cli_opt_parse("trainer", opts, c, optarg, usage)) return VT_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "trainer: unexpected argument \"%s\"\n", argv[optind]);
        return VT_EXIT_USAGE;
    }
#ifdef VT_TEST_HOOKS
    if (g_rankf.hooks.after_op) {
        if (o->hooks) {
            fprintf(stderr, "trainer: --flip-state / --kill-rank cannot be combined with --cheat\n");
            return VT_EXIT_USAGE;
        }
        o->hooks = &g_rankf.hooks;
    }
#endif
    if (vt_recipe_validate(rc) != VT_OK) {
        fprintf(stderr, "trainer: %s\n", vt_errmsg());
        return VT_EXIT_USAGE;
    }
    return -1;
}

static int cmd_export(int argc, char **argv)
{
    static const struct option lo[] = {{"format", required_argument, 0, 'f'}, {"out", required_argument, 0, 'o'},
                                       {"step", required_argument, 0, 's'},   {"pubkey", required_argument, 0, 'p'},
                                       {"optimizer", no_argument, 0, 'O'},    {"help", no_argument, 0, 'h'},
                                       {"layout", required_argument, 0, 'L'}, {"data-dir", required_argument, 0, 'd'},
                                       {"max-memory", required_argument, 0, VT_OPT_MAX_MEMORY}, {0, 0, 0, 0}};
    vt_export_opts o;
    memset(&o, 0, sizeof o);
    const char *format = "safetensors", *layout = "project";
    const vt_cli_opt opts[] = {VT_CLI_U64('s', "--step", 0, UINT64_MAX, &o.step), VT_CLI_END};
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 'o': o.out_path = optarg; break;
        case 'p': o.pubkey_path = optarg; break;
        case 'O': o.with_optimizer = 1; break;
        case 'L': layout = optarg; break;
        case 'd': o.data_root = optarg; break;
        case VT_OPT_MAX_MEMORY:
            if (vt_cli_size("--max-memory", optarg, &g_max_memory) != VT_OK)
                return vt_cli_usage_error(usage, "trainer export: %s", vt_errmsg());
            break;
        case 'h': usage(stdout); return VT_EXIT_OK;
        case 's': o.has_step = 1; /* and parsed below */
            if (vt_cli_opt_parse("trainer export", opts, c, optarg, usage)) return VT_EXIT_USAGE;
            break;
        default:
            if (vt_cli_opt_parse("trainer export", opts, c, optarg, usage)) return VT_EXIT_USAGE;
        }
    }
    if (strcmp(format, "onnx") == 0)
        o.format = VT_EXPORT_ONNX;
    else if (strcmp(format, "safetensors") != 0)
        return vt_cli_usage_error(usage, "trainer export: --format %s: the formats are safetensors and onnx", format);
    if (strcmp(layout, "torch") == 0)
        o.layout = VT_LAYOUT_TORCH;
    else if (strcmp(layout, "project") != 0)
        return vt_cli_usage_error(usage, "trainer export: --layout %s: the layouts are project (the default) and torch",
                                  layout);
    if (optind != argc - 1 || !o.out_path)
        return vt_cli_usage_error(usage, "trainer export: RUN_DIR and --out FILE are required");
    o.run_dir = argv[optind];
    vt_model_set_memory_budget(g_max_memory, VT_ERR_LIMIT); /* the run's manifest is not ours: exit 2 */
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

/* trainer report RUN_DIR --out FILE: run/vt_report.h */
static int cmd_report(int argc, char **argv)
{
    static const struct option lo[] = {{"out", required_argument, 0, 'o'},   {"pubkey", required_argument, 0, 'p'},
                                       {"audit", required_argument, 0, 'a'}, {"no-search", no_argument, 0, 'n'},
                                       {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
    vt_report_opts o;
    memset(&o, 0, sizeof o);
    const char **audits = calloc((size_t)argc + 1, sizeof *audits);
    if (!audits) return VT_EXIT_CANNOT;
    o.audit_paths = audits;
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'o': o.out_path = optarg; break;
        case 'p': o.pubkey_path = optarg; break;
        case 'a': audits[o.n_audit_paths++] = optarg; break;
        case 'n': o.no_search = 1; break;
        case 'h': free(audits); usage(stdout); return VT_EXIT_OK;
        default: free(audits); return vt_cli_usage_error(usage, NULL);
        }
    }
    if (optind != argc - 1 || !o.out_path) {
        free(audits);
        return vt_cli_usage_error(usage, "trainer report: RUN_DIR and --out FILE are required");
    }
    o.run_dir = argv[optind];
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

static int cmd_recipe(int argc, char **argv)
{
    vt_recipe rc;
    vt_train_opts o;
    int program = 0, n = 0;
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (!args) return VT_EXIT_CANNOT;
    for (int i = 0; i < argc; i++) /* --program: this command's own flag */
        if (strcmp(argv[i], "--program") == 0) program = 1;
        else args[n++] = argv[i];
    int st = parse_train(n, args, &rc, &o);
    free(args);
    if (st >= 0) return st;
    char *txt = NULL;
    vt_program p;
    vt_program_init(&p);
    vt_err e = program ? vt_program_build(&rc, &p) : VT_OK;
    if (!e) e = program ? vt_program_describe(&p, &txt) : vt_recipe_to_json(&rc, &txt);
    vt_program_free(&p);
    if (e) {
        fprintf(stderr, "trainer: %s\n", vt_errmsg());
        return vt_cli_exit_for(e);
    }
    printf(program ? "%s" : "%s\n", txt);
    free(txt);
    return VT_EXIT_OK;
}

/* The summary of a finished training (rank 0 only), on stdout. */
static int train_report(const vt_recipe *rc, const vt_train_opts *o, const vt_train_result *res)
{
    char root[65];
    vt_hex(res->root, 32, root);
    double per_step = res->log_steps ? (double)res->log_bytes / (double)res->log_steps : 0.0;
    if (res->finished || (res->committed && res->steps == res->resumed_from)) {
        /* --resume with nothing left to train: the stored run's figures */
        if (res->finished)
            printf("run %s is already finished at step %llu (commitment %s/commitment.vtc); nothing to do\n",
                   o->run_dir, (unsigned long long)res->steps, o->run_dir);
        else
            printf("run %s had every step stored up to %llu: committed it (commitment %s/commitment.vtc)\n", o->run_dir,
                   (unsigned long long)res->steps, o->run_dir);
        printf("final loss      %.4f\n", (double)res->final_loss);
        if (rc->bound.rounding != VT_ROUNDING_EXACT)
            printf("log entries     %llu over %llu steps\n", (unsigned long long)res->log_entries,
                   (unsigned long long)res->log_steps);
        printf("log size        %.0f bytes/step compressed\n", per_step);
        printf("merkle root     %s\n", root);
        return VT_EXIT_OK;
    }
    if (!res->committed) {
        printf("stopped after step %llu (no commitment written; continue with --resume)\n",
               (unsigned long long)res->steps);
        return VT_EXIT_OK;
    }
    printf("trained %llu steps in %.1f s (%.1f steps/s)%s\n", (unsigned long long)res->steps, res->seconds,
           (double)(res->steps - res->resumed_from) / (res->seconds + 1e-9), o->resume ? " after resuming" : "");
    printf("final loss      %.4f\n", (double)res->final_loss);
    uint64_t nsteps = res->steps - res->resumed_from;
    double dense = (double)res->rounded / (double)(nsteps ? nsteps : 1) * 0.2; /* 1.6 bits per rounded element */
    if (rc->bound.rounding == VT_ROUNDING_EXACT)
        printf("rounding        exact: %llu of %llu rounded elements computed exactly (fraction %.2e), no log\n",
               (unsigned long long)res->exact, (unsigned long long)res->rounded,
               (double)res->exact / (double)(res->rounded ? res->rounded : 1));
    else
        printf("log entries     %llu over %llu rounded elements (fraction %.2e)\n", (unsigned long long)res->log_entries,
               (unsigned long long)res->rounded, (double)res->log_entries / (double)(res->rounded ? res->rounded : 1));
    printf("log size        %.0f bytes/step compressed; dense 1.6-bit baseline %.0f bytes/step (%.2f%%)\n", per_step,
           dense, dense > 0 ? 100.0 * per_step / dense : 0.0);
    printf("merkle root     %s\n", root);
    printf("commitment      %s/commitment.vtc\n", o->run_dir);
    if (res->ranks > 1) /* data-parallel (information: neither the manifest nor the commitment names the ranks) */
        printf("ranks           %d (batch %u split %u per rank); %llu sums per rank rounded across the ranks, %llu "
               "of them by the exact phase; %.0f bytes/step sent, all ranks\n",
               res->ranks, rc->batch, rc->batch / (uint32_t)res->ranks, (unsigned long long)res->dist_sums,
               (unsigned long long)res->dist_exact,
               (double)res->dist_bytes / (double)(res->steps > res->resumed_from ? res->steps - res->resumed_from : 1));
    if (res->ranks > 1) /* the state's planned bytes on rank 0 (--shard-state: 1/N of the optimiser state) */
        printf("state memory    %llu of %llu bytes on rank 0, optimiser state %llu of %llu (%s); the model's "
               "allocation %llu bytes\n",
               (unsigned long long)res->state_bytes, (unsigned long long)res->state_total,
               (unsigned long long)res->opt_bytes, (unsigned long long)res->opt_total,
               res->sharded ? "sharded over the ranks, --shard-state" : "every rank holds it all",
               (unsigned long long)res->model_bytes);
    return VT_EXIT_OK;
}

static int cmd_train(int argc, char **argv)
{
    vt_recipe rc;
    vt_train_opts o;
    int st = parse_train(argc, argv, &rc, &o);
    if (st >= 0) return st;
    if (!o.run_dir || !o.key_path)
        return vt_cli_usage_error(usage, "trainer train: --run DIR and --key KEYFILE are required");
    /* the whole recipe before anything is written: its dataset's shape here, the model's memory
     * against the budget in vt_model_init (before the run directory is created); both the user's */
    if (vt_recipe_check_dataset(&rc) != VT_OK) {
        fprintf(stderr, "trainer: %s\n", vt_errmsg());
        return VT_EXIT_USAGE;
    }
    vt_model_set_memory_budget(g_max_memory, VT_ERR_ARG);
    /* data-parallel when launched by mpirun with N > 1 ranks (docs/distributed.md); otherwise one
     * process and no MPI call at all */
    vt_comm *comm = NULL;
    vt_err e = vt_dist_init(&comm);
    if (e) {
        fprintf(stderr, "trainer: %s\n", vt_errmsg());
        return vt_cli_exit_for(e);
    }
    const int rank = vt_dist_rank(comm), size = vt_dist_size(comm);
    if (size > 1) {
        o.comm = comm;
        if (rank == 0 && !o.quiet && rc.batch % (uint32_t)size == 0) /* information: outside the manifest */
            fprintf(stderr,
                    "trainer: data-parallel on %d ranks: the batch of %u split %u per rank (rank r: examples r*%u .. "
                    "r*%u+%u of each step), rank 0 writes %s%s\n",
                    size, rc.batch, rc.batch / (uint32_t)size, rc.batch / (uint32_t)size,
                    rc.batch / (uint32_t)size, rc.batch / (uint32_t)size - 1, o.run_dir,
                    o.shard_state ? "; --shard-state: each rank holds and updates 1/N of the optimiser state" : "");
    }
    vt_train_result res;
    e = vt_train_run(&rc, &o, &res);
    if (e) {
        if (size == 1 || (res.err_common && rank == 0)) /* every rank's error (naming the rank): printed once */
            fprintf(stderr, "trainer: %s\n", vt_errmsg());
        else if (!res.err_common && strncmp(vt_errmsg(), "rank ", 5) == 0) /* this rank's own, named (MPI's) */
            fprintf(stderr, "trainer: %s\n", vt_errmsg());
        else if (!res.err_common) /* this rank's own */
            fprintf(stderr, "trainer (rank %d of %d): %s\n", rank, size, vt_errmsg());
        st = vt_cli_exit_for(e);
    } else {
        st = rank == 0 ? train_report(&rc, &o, &res) : VT_EXIT_OK;
    }
    /* a rank failing alone leaves without MPI_Finalize: mpirun then stops the others */
    if (size == 1 || !e || res.err_common) {
        vt_err fe = vt_dist_finalize(&comm);
        if (fe && st == VT_EXIT_OK) {
            fprintf(stderr, "trainer (rank %d of %d): %s\n", rank, size, vt_errmsg());
            st = vt_cli_exit_for(fe);
        }
    }
    return st;
}

/* Benchmark baseline: the recipe trained by the plain FP32/FP64 step (model/vt_plain.h). Takes
 * its own --precision and --steps out of argv and hands the rest to parse_train. */
static int cmd_plain(int argc, char **argv)
{
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) return VT_EXIT_CANNOT;
    int n = 0, fp64 = -1;
    const char *steps = NULL;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        int is_prec = strcmp(argv[i], "--precision") == 0, is_steps = strcmp(argv[i], "--steps") == 0;
        if (is_prec || is_steps) {
            if (i + 1 >= argc) {
                fprintf(stderr, "trainer plain: %s needs a value\n", argv[i]);
                free(rest);
                return VT_EXIT_USAGE;
            }
            v = argv[++i];
        } else if (strncmp(argv[i], "--precision=", 12) == 0) {
            is_prec = 1, v = argv[i] + 12;
        } else if (strncmp(argv[i], "--steps=", 8) == 0) {
            is_steps = 1, v = argv[i] + 8;
        }
        if (is_prec)
            fp64 = strcmp(v, "fp64") == 0 ? 1 : strcmp(v, "fp32") == 0 ? 0 : -2;
        else if (is_steps)
            steps = v;
        else
            rest[n++] = argv[i];
    }
    vt_recipe rc;
    vt_train_opts o;
    int st = parse_train(n, rest, &rc, &o);
    free(rest);
    if (st >= 0) return st;
    if (fp64 < 0)
        return vt_cli_usage_error(usage, "trainer plain: %s",
                                  fp64 == -1 ? "--precision fp32 or --precision fp64 is required"
                                             : "--precision must be fp32 or fp64");
    if (steps && vt_cli_u64("--steps", steps, 1, (uint64_t)INT64_MAX, &rc.steps) != VT_OK) {
        fprintf(stderr, "trainer plain: %s\n", vt_errmsg());
        return VT_EXIT_USAGE;
    }
    char spec[VT_RECIPE_SPEC_MAX];
    vt_recipe_dataset_spec(&rc, spec, sizeof spec);
    vt_dataset ds;
    vt_plain p;
    if (vt_data_load(spec, o.data_root, &ds) != VT_OK) {
        fprintf(stderr, "trainer plain: %s\n", vt_errmsg());
        return VT_EXIT_CANNOT;
    }
    vt_err e = vt_plain_init(&p, &rc, ds.n, fp64);
    double loss = 0, t0 = vt_now();
    for (uint64_t s = 1; !e && s <= rc.steps; s++) e = vt_plain_step(&p, &ds, &loss);
    double secs = vt_now() - t0;
    if (e) {
        fprintf(stderr, "trainer plain: %s\n", vt_errmsg());
        vt_plain_free(&p); /* safe after a failed init too */
        vt_data_free(&ds);
        return vt_cli_exit_for(e);
    }
    printf("plain %s step (benchmark baseline, not verifiable): %llu steps in %.2f s (%.1f steps/s)\n",
           fp64 ? "FP64" : "FP32", (unsigned long long)rc.steps, secs, (double)rc.steps / (secs + 1e-9));
    printf("final loss      %.4f\n", loss);
    vt_plain_free(&p);
    vt_data_free(&ds);
    return VT_EXIT_OK;
}

/* The model of a run's last checkpoint (the final parameters): *m initialised on success. */
static vt_err load_run_model(const char *run, vt_recipe *rc, vt_model *m, uint64_t *step)
{
    vt_store *st = NULL;
    char *mf = NULL;
    size_t ml = 0, nck = 0;
    uint8_t mh[32], dh[32];
    uint64_t *cks = NULL;
    float *state = NULL;
    memset(m, 0, sizeof *m);
    vt_err e = vt_store_open(run, 1, &st);
    if (!e) e = vt_store_manifest(st, &mf, &ml, mh);
    if (!e) e = vt_manifest_parse(mf, ml, rc, dh);
    if (!e) e = vt_store_list_checkpoints(st, &cks, &nck);
    if (!e && nck == 0) e = vt_set_error(VT_ERR_FORMAT, "run %s has no checkpoint", run);
    /* the model is only evaluated here: the example count merely sizes its (unused) shuffle */
    if (!e) e = vt_model_init(m, rc, rc->batch, VT_ORDER_BLAS);
    if (!e) e = vt_store_get_checkpoint(st, cks[nck - 1], m->n_state, &state);
    if (!e) e = vt_model_set_state(m, cks[nck - 1], state, m->n_state);
    if (!e) *step = cks[nck - 1];
    if (e && m->state) vt_model_free(m);
    free(state);
    free(cks);
    free(mf);
    vt_store_close(st);
    return e;
}

/* Accuracy (validation loss for a text model) of a run's last checkpoint on a dataset. */
static int cmd_eval(int argc, char **argv)
{
    static const struct option lo[] = {{"run", required_argument, 0, 'r'},
                                       {"dataset", required_argument, 0, 'D'},
                                       {"data-dir", required_argument, 0, 'd'},
                                       {"max-memory", required_argument, 0, VT_OPT_MAX_MEMORY},
                                       {"per-example", required_argument, 0, 'P'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    const char *run = NULL, *spec = NULL, *root = NULL, *per_example = NULL;
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'r': run = optarg; break;
        case 'D': spec = optarg; break;
        case 'd': root = optarg; break;
        case 'P': per_example = optarg; break;
        case VT_OPT_MAX_MEMORY:
            if (vt_cli_size("--max-memory", optarg, &g_max_memory) != VT_OK)
                return vt_cli_usage_error(usage, "trainer eval: %s", vt_errmsg());
            break;
        case 'h': usage(stdout); return VT_EXIT_OK;
        default: return vt_cli_usage_error(usage, NULL);
        }
    }
    if (optind < argc) return vt_cli_usage_error(usage, "trainer eval: unexpected argument \"%s\"", argv[optind]);
    if (!run) return vt_cli_usage_error(usage, "trainer eval: --run DIR is required");
    char dspec[VT_RECIPE_SPEC_MAX];
    vt_recipe rc;
    vt_model m;
    vt_dataset ds;
    uint64_t step = 0;
    double acc = 0;
    size_t cnt = 0;
    memset(&ds, 0, sizeof ds);
    vt_model_set_memory_budget(g_max_memory, VT_ERR_LIMIT); /* the run's manifest is not ours: exit 2 */
    vt_err e = load_run_model(run, &rc, &m, &step);
    const int text = rc.arch == VT_ARCH_GPT;
    int st = vt_cli_exit_for_input(e); /* the run is the input; --dataset below is the user's */
    if (!e) {
        if (spec)
            snprintf(dspec, sizeof dspec, "%s", spec);
        else if (strncmp(rc.dataset, "mnist", 5) == 0)
            snprintf(dspec, sizeof dspec, "mnist-test");
        else if (strncmp(rc.dataset, "cifar10", 7) == 0)
            snprintf(dspec, sizeof dspec, "cifar10-test");
        else if (strncmp(rc.dataset, "shakespeare", 11) == 0)
            snprintf(dspec, sizeof dspec, "shakespeare-val");
        else if (text && vt_data_is_file_spec(rc.dataset)) /* a text file: its last 10% */
            snprintf(dspec, sizeof dspec, "text-val:%s", strchr(rc.dataset, ':') + 1);
        else
            vt_recipe_dataset_spec(&rc, dspec, sizeof dspec);
        e = vt_data_load(dspec, root, &ds);
        /* an unknown or unfitting --dataset is the user's (64); the default one failing to load, not */
        st = spec ? vt_cli_exit_for(e) : vt_cli_exit_for_input(e);
    }
    if (!e && !text && ds.hash_version == 2 && ds.d == rc.widths[0] && /* a user's file: every label a class */
        vt_data_check_labels(&ds, rc.widths[rc.n_layers]) != VT_OK) {
        st = spec ? VT_EXIT_USAGE : VT_EXIT_CANNOT;
        e = VT_ERR_ARG;
    } else if (!e && !text && (ds.d != rc.widths[0] || (ds.hash_version != 2 && ds.n_classes != rc.widths[rc.n_layers]))) {
        e = vt_set_error(VT_ERR_ARG, "dataset %s (%u features, %u classes) does not fit the model (%u -> %u)", dspec,
                         ds.d, ds.n_classes, rc.widths[0], rc.widths[rc.n_layers]);
        st = VT_EXIT_USAGE;
    }
    if (!e && text && per_example) {
        e = vt_set_error(VT_ERR_ARG, "--per-example: a text model (arch=gpt) has no predicted classes");
        st = VT_EXIT_USAGE;
    }
    uint32_t *pred = NULL;
    if (!e && per_example && !(pred = calloc(ds.n ? ds.n : 1, sizeof *pred))) {
        e = vt_set_error(VT_ERR_NOMEM, "out of memory");
        st = vt_cli_exit_for(e);
    }
    if (!e) {
        e = text ? vt_model_text_loss(&m, &ds, 0, &acc, &cnt) : vt_model_predict(&m, &ds, 0, &acc, pred);
        st = vt_cli_exit_for_input(e);
    }
    if (!e && per_example) { /* one line per example: index, label, predicted class */
        FILE *f = fopen(per_example, "w");
        size_t correct = 0;
        for (size_t i = 0; f && i < ds.n; i++) correct += pred[i] == ds.y[i];
        if (f) fprintf(f, "# trainer eval --per-example: %s, %zu examples, %zu correct; index label predicted\n",
                       ds.name, ds.n, correct);
        for (size_t i = 0; f && i < ds.n; i++) fprintf(f, "%zu %u %u\n", i, (unsigned)ds.y[i], pred[i]);
        if (!f || ferror(f) | (fclose(f) != 0)) {
            e = vt_set_error(VT_ERR_IO, "--per-example %s: cannot write it", per_example);
            st = VT_EXIT_CANNOT;
        }
    }
    free(pred);
    if (!e) {
        printf("run             %s (step %llu of %llu)\n", run, (unsigned long long)step, (unsigned long long)rc.steps);
        printf("dataset         %s (%zu %s)\n", ds.name, ds.n, text ? "characters" : "examples");
        if (text) printf("validation loss %.4f nats/char (%zu predicted characters)\n", acc, cnt);
        else printf("accuracy        %.4f\n", acc);
        /* full precision, for comparisons: the FP64 mean loss; the exact count of correct examples */
        if (text) printf("mean loss       %.17g nats/char (FP64, all digits)\n", acc);
        else printf("correct         %.0f of %zu (accuracy %.17g)\n", acc * (double)ds.n, ds.n, acc);
    } else {
        fprintf(stderr, "trainer eval: %s\n", vt_errmsg());
    }
    vt_data_free(&ds);
    if (m.state) vt_model_free(&m);
    return e ? st : VT_EXIT_OK;
}

/* Text generated from a text model's final parameters (deterministic: exact rounding, Philox). */
static int cmd_sample(int argc, char **argv)
{
    static const struct option lo[] = {{"tokens", required_argument, 0, 'n'},
                                       {"seed", required_argument, 0, 's'},
                                       {"prompt", required_argument, 0, 'p'},
                                       {"data-dir", required_argument, 0, 'd'},
                                       {"max-memory", required_argument, 0, VT_OPT_MAX_MEMORY},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    const char *root = NULL, *prompt = "\n";
    uint64_t n = 200, seed = 1;
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (vt_cli_u64("--tokens", optarg, 1, 1000000, &n) != VT_OK) return vt_cli_usage_error(usage, "%s", vt_errmsg());
            break;
        case 's':
            if (vt_cli_u64("--seed", optarg, 0, UINT64_MAX, &seed) != VT_OK) return vt_cli_usage_error(usage, "%s", vt_errmsg());
            break;
        case 'p': prompt = optarg; break;
        case 'd': root = optarg; break;
        case VT_OPT_MAX_MEMORY:
            if (vt_cli_size("--max-memory", optarg, &g_max_memory) != VT_OK)
                return vt_cli_usage_error(usage, "trainer sample: %s", vt_errmsg());
            break;
        case 'h': usage(stdout); return VT_EXIT_OK;
        default: return vt_cli_usage_error(usage, NULL);
        }
    }
    if (optind != argc - 1) return vt_cli_usage_error(usage, "trainer sample: RUN_DIR is required");
    const char *run = argv[optind];
    vt_recipe rc;
    vt_model m;
    vt_dataset ds;
    uint64_t step = 0;
    memset(&ds, 0, sizeof ds);
    vt_model_set_memory_budget(g_max_memory, VT_ERR_LIMIT); /* the run's manifest is not ours: exit 2 */
    vt_err e = load_run_model(run, &rc, &m, &step);
    if (!e && rc.arch != VT_ARCH_GPT) e = vt_set_error(VT_ERR_ARG, "run %s is not a text model (arch=gpt)", run);
    char dspec[VT_RECIPE_SPEC_MAX];
    if (!e) {
        vt_recipe_dataset_spec(&rc, dspec, sizeof dspec);
        e = vt_data_load(dspec, root, &ds); /* the vocabulary */
    }
    size_t np = strlen(prompt);
    uint8_t *ids = malloc(np + n + 1);
    if (!e && !ids) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !e && i < np; i++) {
        int k = -1;
        for (uint32_t v = 0; v < ds.n_classes; v++)
            if (ds.chars[v] == (uint8_t)prompt[i]) k = (int)v;
        if (k < 0) e = vt_set_error(VT_ERR_ARG, "--prompt: character 0x%02x is not in the vocabulary", (uint8_t)prompt[i]);
        else ids[i] = (uint8_t)k;
    }
    if (!e && np == 0) e = vt_set_error(VT_ERR_ARG, "--prompt: empty");
    if (!e) e = vt_model_sample(&m, seed, ids, np, n, ids + np);
    if (!e) {
        for (size_t i = 0; i < np + n; i++) putchar(ds.chars[ids[i]]);
        putchar('\n');
    } else {
        fprintf(stderr, "trainer sample: %s\n", vt_errmsg());
    }
    free(ids);
    vt_data_free(&ds);
    if (m.state) vt_model_free(&m);
    if (e) return e == VT_ERR_ARG ? VT_EXIT_USAGE : VT_EXIT_CANNOT;
    return VT_EXIT_OK;
}

static int cmd_serve(int argc, char **argv)
{
    static const struct option lo[] = {{"listen", required_argument, 0, 'l'},   {"key", required_argument, 0, 'k'},
                                       {"data-dir", required_argument, 0, 'd'}, {"order", required_argument, 0, 'o'},
                                       {"port-file", required_argument, 0, 'p'},
                                       {"connections", required_argument, 0, 'n'}, {"idle-ms", required_argument, 0, 'i'},
                                       {"quiet", no_argument, 0, 'q'},
                                       {"arbiter-key", required_argument, 0, 'A'}, {"advertise", required_argument, 0, 'a'},
                                       {"service-file", required_argument, 0, 'f'},
                                       {"record-ttl", required_argument, 0, 'T'},
                                       {"max-sessions", required_argument, 0, 'S'},
                                       {"sessions-per-arbiter", required_argument, 0, 's'},
                                       {"max-recompute-steps", required_argument, 0, 'R'},
                                       {"chain-cache", required_argument, 0, 'c'},
                                       {"handshake-ms", required_argument, 0, 'H'},
                                       {"max-pending", required_argument, 0, 'P'},
                                       {"pending-per-ip", required_argument, 0, 'J'},
                                       {"help", no_argument, 0, 'h'},
#ifdef VT_TEST_HOOKS
                                       {"cheat", required_argument, 0, 'C'},
                                       {"misbehave", required_argument, 0, 'm'},
#endif
                                       {0, 0, 0, 0}};
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
    optind = 2;
    int c;
    const vt_cli_opt opts[] = {VT_CLI_INT('n', "--connections", 0, INT32_MAX, &o.max_connections),
                               VT_CLI_INT('i', "--idle-ms", 1, INT32_MAX, &o.idle_ms),
                               VT_CLI_INT('T', "--record-ttl", 1, INT32_MAX, &o.record_ttl_s),
                               VT_CLI_INT('S', "--max-sessions", 1, 128, &o.max_sessions),
                               VT_CLI_INT('s', "--sessions-per-arbiter", 1, 128, &o.sessions_per_arbiter),
                               VT_CLI_INT('c', "--chain-cache", 0, VT_SERVE_CACHE_MAX, &o.chain_cache),
                               VT_CLI_INT('H', "--handshake-ms", 1, INT32_MAX, &o.handshake_ms),
                               VT_CLI_INT('P', "--max-pending", 1, 65536, &o.max_pending),
                               VT_CLI_INT('J', "--pending-per-ip", 1, 65536, &o.pending_per_ip),
                               VT_CLI_U64('R', "--max-recompute-steps", 1, UINT64_MAX, &o.max_recompute_steps),
                               VT_CLI_ORDER('o', "--order", &o.order),
                               VT_CLI_END};
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'l': o.listen = optarg; break;
        case 'k': o.key_path = optarg; break;
        case 'd': o.data_root = optarg; break;
        case 'p': o.port_file = optarg; break;
        case 'a': o.advertise = optarg; break;
        case 'f': o.service_file = optarg; break;
        case 'h': usage(stdout); return VT_EXIT_OK;
        case 'A':
            if (o.n_arbiters == VT_SERVE_MAX_ARBITERS) {
                fprintf(stderr, "trainer serve: at most %d --arbiter-key\n", VT_SERVE_MAX_ARBITERS);
                return VT_EXIT_USAGE;
            }
            if (vt_sign_init() || vt_sign_read_public_key(optarg, o.arbiter_pk[o.n_arbiters])) {
                fprintf(stderr, "trainer serve: --arbiter-key %s: %s\n", optarg, vt_errmsg());
                return VT_EXIT_USAGE;
            }
            o.n_arbiters++;
            break;
        case 'q': o.quiet = 1; break;
#ifdef VT_TEST_HOOKS
        case 'm':
            if (vt_cheats_misbehave(&g_cheats, optarg) != VT_OK) {
                fprintf(stderr, "trainer serve: %s\n", vt_errmsg());
                return VT_EXIT_USAGE;
            }
            o.serve_hooks = &g_cheats.serve_hooks;
            break;
        case 'C':
            if (vt_cheats_parse(&g_cheats, optarg) != VT_OK) {
                fprintf(stderr, "trainer: %s\n", vt_errmsg());
                return VT_EXIT_USAGE;
            }
            o.hooks = &g_cheats.hooks;
            break;
#endif
        default:
            if (vt_cli_opt_parse("trainer serve", opts, c, optarg, usage)) return VT_EXIT_USAGE;
        }
    }
    if (optind != argc - 1 || !o.listen || !o.key_path || o.n_arbiters == 0) {
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
    o.run_dir = argv[optind];
    vt_err se = vt_serve_run(&o);
    if (se) {
        fprintf(stderr, "trainer serve: %s\n", vt_errmsg());
        return vt_cli_exit_for_input(se); /* the run is the input: 2; an internal failure 70 */
    }
    return VT_EXIT_OK;
}

static int main_dispatch(int argc, char **argv)
{
#ifdef VT_TEST_HOOKS
    vt_cheats_init(&g_cheats);
#endif
    if (argc < 2) return vt_cli_usage_error(usage, NULL);
    if (strcmp(argv[1], "keygen") == 0) return vt_cli_keygen("trainer", argc, argv, usage, VT_CLI_KEYGEN_FINGERPRINT);
    /* the floating-point environment, e.g. FTZ set by a -ffast-math CBLAS at load: refused, exit 2 */
    if (vt_env_cli_check("trainer")) return VT_EXIT_CANNOT;
    if (strcmp(argv[1], "train") == 0) return cmd_train(argc, argv);
    if (strcmp(argv[1], "serve") == 0) return cmd_serve(argc, argv);
    if (strcmp(argv[1], "recipe") == 0) return cmd_recipe(argc, argv);
    if (strcmp(argv[1], "export") == 0) return cmd_export(argc, argv);
    if (strcmp(argv[1], "report") == 0) return cmd_report(argc, argv);
    if (strcmp(argv[1], "plain") == 0) return cmd_plain(argc, argv);
    if (strcmp(argv[1], "eval") == 0) return cmd_eval(argc, argv);
    if (strcmp(argv[1], "sample") == 0) return cmd_sample(argc, argv);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return VT_EXIT_OK;
    }
    return vt_cli_usage_error(usage, "trainer: unknown command \"%s\"", argv[1]);
}

int main(int argc, char **argv)
{
    const char *bad = NULL; /* --threads N, wherever it stands (common/vt_par.h) */
    if (vt_par_take_option(&argc, argv, &bad)) {
        fprintf(stderr, "%s: --threads %s: expected a number of threads from 1 to %d\n", "trainer", bad, VT_PAR_MAX);
        return VT_EXIT_USAGE;
    }
    int st = main_dispatch(argc, argv);
    /* after the error message: where the error was raised (VT_DEBUG >= 1 or VT_DEBUG_ERRORS=1) */
    if (st != VT_EXIT_OK) vt_err_site_print("trainer");
    return st;
}
