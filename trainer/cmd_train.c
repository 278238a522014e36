/* trainer train / recipe / plain: a recipe from --recipe and --set, then trained verifiably,
 * printed, or trained by the plain baseline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../arch/vt_graph.h"
#include "../common/vt_hash.h"
#include "../dist/vt_dist.h"
#include "../model/vt_plain.h"
#include "../common/vt_par.h"
#include "../run/vt_init.h"
#include "../run/vt_shares.h"
#include "trainer.h"

#define HELP_RECIPE "JSON recipe (default: the built-in MNIST MLP recipe; `trainer recipe` prints it)"
#define HELP_MODEL                                                                                                     \
    "the client's own network: a forward graph as torch.onnx.export writes it (recipe key model;\n"                   \
    "docs/models.md); its initializers are the parameters and their step-0 values"
#define HELP_SET "override one recipe key (repeatable), e.g. --set steps=100; applied after --recipe"

/* The recipe of --recipe FILE and the --set list, validated. Returns -1 or an exit status. */
static int make_recipe(const char *prog, const char *file, const vt_cli_list *sets, const char *model,
                       vt_recipe *rcp)
{
    vt_recipe_default(rcp);
    vt_err e = file ? vt_recipe_load_file(rcp, file) : VT_OK;
    if (e) { /* the user's recipe: 64, as a --set would be */
        fprintf(stderr, "trainer: %s\n", vt_errmsg());
        return vt_cli_exit_for(e);
    }
    for (int i = 0; i < sets->n; i++)
        if (vt_recipe_set(rcp, sets->v[i]) != VT_OK) {
            fprintf(stderr, "trainer: --set %s: %s\n", sets->v[i], vt_errmsg());
            return VT_EXIT_USAGE;
        }
    if (model && strlen(model) >= sizeof rcp->model) {
        fprintf(stderr, "trainer: --model: a path of at most %zu bytes\n", sizeof rcp->model - 1);
        return VT_EXIT_USAGE;
    }
    if (model) snprintf(rcp->model, sizeof rcp->model, "%s", model);
    vt_err e2 = rcp->model[0] ? vt_recipe_import_model(rcp) : VT_OK; /* the client's graph: layers from it */
    if (!e2) vt_recipe_new_program(rcp); /* not named: the newest program for arch=gpt and resnet */
    if (!e2) e2 = vt_recipe_validate(rcp);
    if (e2) {
        fprintf(stderr, "trainer: %s\n", vt_errmsg());
        return e2 == VT_ERR_ARG ? VT_EXIT_USAGE : vt_cli_exit_for(e2);
    }
    (void)prog;
    return -1;
}

/* The summary of a finished training (rank 0 only), on stdout. */
static int train_report(const vt_recipe *rcp, const vt_train_opts *o, const vt_train_result *res, int shares)
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
        if (rcp->bound.rounding != VT_ROUNDING_EXACT)
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
    if (rcp->bound.rounding == VT_ROUNDING_EXACT)
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
    if (shares > 1) /* --threads N as shares of the batch (information, as the ranks) */
        printf("threads         %d shares of the batch (%u examples each); %llu sums per share rounded across the "
               "shares, %llu of them by the exact phase\n",
               shares, rcp->batch / (uint32_t)shares, (unsigned long long)res->dist_sums,
               (unsigned long long)res->dist_exact);
    else if (res->ranks > 1) /* data-parallel (information: neither the manifest nor the commitment names the ranks) */
        printf("ranks           %d (batch %u split %u per rank); %llu sums per rank rounded across the ranks, %llu "
               "of them by the exact phase; %.0f bytes/step sent, all ranks\n",
               res->ranks, rcp->batch, rcp->batch / (uint32_t)res->ranks, (unsigned long long)res->dist_sums,
               (unsigned long long)res->dist_exact,
               (double)res->dist_bytes / (double)(res->steps > res->resumed_from ? res->steps - res->resumed_from : 1));
    if (res->ranks > 1 && shares <= 1) /* the state's planned bytes on rank 0 (--shard-state: 1/N of the optimiser state) */
        printf("state memory    %llu of %llu bytes on rank 0, optimiser state %llu of %llu (%s); the model's "
               "allocation %llu bytes\n",
               (unsigned long long)res->state_bytes, (unsigned long long)res->state_total,
               (unsigned long long)res->opt_bytes, (unsigned long long)res->opt_total,
               res->sharded ? "sharded over the ranks, --shard-state" : "every rank holds it all",
               (unsigned long long)res->model_bytes);
    return VT_EXIT_OK;
}

int trainer_train(int argc, char **argv)
{
    vt_train_opts o;
    memset(&o, 0, sizeof o);
    o.order = VT_ORDER_BLAS;
    const char *recipe = NULL, *model = NULL;
    vt_cli_list sets = {0};
    uint64_t max_memory = 0;
    int layout = 0, backend = 0;
    const vt_cli_opt opts[] = {
        VT_OPT_S("--key", "KEYFILE", "the trainer's Ed25519 secret key (`trainer keygen`); required", &o.key_path),
        VT_OPT_S("--recipe", "FILE", HELP_RECIPE, &recipe),
        VT_OPT_L("--set", "KEY=VALUE", HELP_SET, &sets),
        VT_OPT_O("--order", "the trainer's evaluation order (default blas)", &o.order),
        VT_OPT_S("--data-dir", "DIR", VT_HELP_DATA_DIR, &o.data_root),
        VT_OPT_S("--model", "NET.onnx", HELP_MODEL, &model),
        VT_OPT_S("--init", "FILE", "the initial state from a safetensors file (`trainer export`'s names and\n"
                                   "shapes, F32); its SHA-256 goes into the manifest, the run keeps a copy", &o.init_path),
        VT_OPT_C("--init-layout", "auto|project|torch",
                 "the --init file's layout: project (`trainer export`), torch (a PyTorch\n"
                 "state_dict, `export --layout torch`'s names and shapes) or auto (default:\n"
                 "torch when its metadata says vt.layout torch); recorded in the manifest", &layout),
        VT_OPT_C("--backend", "cpu|cuda", VT_HELP_BACKEND, &backend),
        VT_OPT_F("--resume", "continue an interrupted run from its newest usable checkpoint", &o.resume),
        VT_OPT_I("--reader-wait", "S", "how long the end of training waits for readers holding an older snapshot\n"
                                       "of run.db before it fails uncommitted (default 60)", 1, 86400, &o.reader_wait_s),
        VT_OPT_Z("--max-memory", "the model's memory budget, e.g. 8G (default: the available memory); a\n"
                                 "recipe that needs more is refused before anything is written", &max_memory),
        VT_OPT_F("--shard-state", "under mpirun -np N: each rank holds and updates 1/N of the optimiser state\n"
                                  "and of the parameters (allgathered after each step); the same commitment",
                 &o.shard_state),
        VT_OPT_F("--quiet", "no progress line", &o.quiet),
        VT_OPT_END};
    const vt_cli_cmd cmd = {
        "trainer train", "RUN_DIR --key KEYFILE [options]",
        "train a recipe verifiably into RUN_DIR (created with its missing parents) and commit to every step;\n"
        "under `mpirun -np N`: data-parallel on N ranks, the batch (a multiple of N) split across them,\n"
        "rank 0 writing the run: the one-process commitment (docs/distributed.md); with --threads N in one\n"
        "process, N threads each on a share of the batch, combined as the ranks are: the same commitment\n"
        "(docs/architecture.md \"Threads\")",
        "blas (the trainer's; the commitment is the same in every order under exact rounding)", opts,
        trainer_test_train_opts(&o), 1, 1, 0, NULL};
    vt_cli_args a;
    int st = vt_cli_parse(&cmd, argc, argv, 2, &a);
    if (st >= 0) return st;
    o.run_dir = a.v[0];
    o.init_layout = layout == 0 ? VT_INIT_AUTO : layout == 1 ? VT_INIT_PROJECT : VT_INIT_TORCH;
    o.backend = backend ? "cuda" : NULL;
    vt_recipe rcp;
    if ((st = make_recipe("trainer train", recipe, &sets, model, &rcp)) >= 0) return st;
    if ((st = trainer_test_train_done(&o)) >= 0) return st;
    if (!o.key_path) {
        fprintf(stderr, "trainer train: --key KEYFILE is required\n");
        return VT_EXIT_USAGE;
    }
    /* the whole recipe before anything is written: its dataset's shape here, the model's memory
     * against the budget in vt_model_init (before the run directory is created); both the user's */
    if (vt_recipe_check_dataset(&rcp) != VT_OK) {
        fprintf(stderr, "trainer: %s\n", vt_errmsg());
        return VT_EXIT_USAGE;
    }
    vt_model_set_memory_budget(max_memory, VT_ERR_ARG);
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
        if (rank == 0 && !o.quiet && rcp.batch % (uint32_t)size == 0) /* information: outside the manifest */
            fprintf(stderr,
                    "trainer: data-parallel on %d ranks: the batch of %u split %u per rank (rank r: examples r*%u .. "
                    "r*%u+%u of each step), rank 0 writes %s%s\n",
                    size, rcp.batch, rcp.batch / (uint32_t)size, rcp.batch / (uint32_t)size,
                    rcp.batch / (uint32_t)size, rcp.batch / (uint32_t)size - 1, o.run_dir,
                    o.shard_state ? "; --shard-state: each rank holds and updates 1/N of the optimiser state" : "");
    }
    /* --threads N (or VT_THREADS) in one process: N shares of the batch where it splits (run/vt_shares.h),
     * else the per-operation split, said on stderr; the default count (the CPUs) splits each operation's
     * loops, as before shares (opt-in: N copies of the state, and shares wait for each other's time slices
     * on a loaded machine) */
    char why[160] = "";
    const int shares = vt_par_threads_asked() ? vt_train_shares(&rcp, &o, vt_par_threads(), why, sizeof why) : 1;
    if (!o.quiet && shares > 1)
        fprintf(stderr, "trainer: %d threads, each on a share of %u of the batch's %u examples\n", shares,
                rcp.batch / (uint32_t)shares, rcp.batch);
    else if (!o.quiet && why[0])
        fprintf(stderr, "trainer: --threads %d: %s: each operation's loops split over the threads instead\n",
                vt_par_threads(), why);
    vt_train_result res;
    e = shares > 1 ? vt_train_run_shares(&rcp, &o, shares, &res) : vt_train_run(&rcp, &o, &res);
    if (e) {
        if (size == 1 || (res.err_common && rank == 0)) /* every rank's error (naming the rank): printed once */
            fprintf(stderr, "trainer: %s\n", vt_errmsg());
        else if (!res.err_common && strncmp(vt_errmsg(), "rank ", 5) == 0) /* this rank's own, named (MPI's) */
            fprintf(stderr, "trainer: %s\n", vt_errmsg());
        else if (!res.err_common) /* this rank's own */
            fprintf(stderr, "trainer (rank %d of %d): %s\n", rank, size, vt_errmsg());
        st = vt_cli_exit_for(e);
    } else {
        st = rank == 0 ? train_report(&rcp, &o, &res, shares) : VT_EXIT_OK;
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

int trainer_recipe(int argc, char **argv)
{
    const char *recipe = NULL, *model = NULL;
    vt_cli_list sets = {0};
    int program = 0, quiet = 0;
    const vt_cli_opt opts[] = {
        VT_OPT_S("--recipe", "FILE", HELP_RECIPE, &recipe), VT_OPT_L("--set", "KEY=VALUE", HELP_SET, &sets),
        VT_OPT_S("--model", "NET.onnx", HELP_MODEL, &model),
        VT_OPT_F("--program", "print the step program instead: the tensor table and the operations with\n"
                              "their ids (docs/format.md)", &program),
        VT_OPT_F("--quiet", "(accepted, as train takes it; recipe prints no progress)", &quiet), VT_OPT_END};
    const vt_cli_cmd cmd = {"trainer recipe", "[--recipe FILE] [--set KEY=VALUE]... [--program]",
                            "print the effective recipe (JSON), every key with its value", NULL, opts, NULL, 0, 0, -1,
                            NULL};
    vt_cli_args a;
    int st = vt_cli_parse(&cmd, argc, argv, 2, &a);
    if (st >= 0) return st;
    vt_recipe rcp;
    if ((st = make_recipe("trainer recipe", recipe, &sets, model, &rcp)) >= 0) return st;
    char *txt = NULL;
    vt_program p;
    vt_program_init(&p);
    vt_err e = program ? vt_program_build(&rcp, &p) : VT_OK;
    if (!e) e = program ? vt_program_describe(&p, &txt) : vt_recipe_to_json(&rcp, &txt);
    vt_program_free(&p);
    if (e) {
        fprintf(stderr, "trainer: %s\n", vt_errmsg());
        return vt_cli_exit_for(e);
    }
    printf(program ? "%s" : "%s\n", txt);
    free(txt);
    return VT_EXIT_OK;
}

/* Benchmark baseline: the recipe trained by the plain FP32/FP64 step (model/vt_plain.h). */
int trainer_plain(int argc, char **argv)
{
    const char *recipe = NULL, *data_root = NULL, *model = NULL;
    vt_cli_list sets = {0};
    int fp64 = -1, quiet = 0;
    uint64_t steps = 0;
    const vt_cli_opt opts[] = {
        VT_OPT_C("--precision", "fp32|fp64", "the plain step's precision (required)", &fp64),
        VT_OPT_S("--recipe", "FILE", HELP_RECIPE, &recipe), VT_OPT_L("--set", "KEY=VALUE", HELP_SET, &sets),
        VT_OPT_S("--model", "NET.onnx", HELP_MODEL, &model),
        VT_OPT_U("--steps", "N", "train N steps instead of the recipe's", 1, (uint64_t)INT64_MAX, &steps),
        VT_OPT_S("--data-dir", "DIR", VT_HELP_DATA_DIR, &data_root),
        VT_OPT_F("--quiet", "(accepted; the baseline prints no progress)", &quiet), VT_OPT_END};
    const vt_cli_cmd cmd = {"trainer plain",
                            "--precision fp32|fp64 [--recipe FILE] [--model NET.onnx] [--set KEY=VALUE]... [--steps N]",
                            "BENCHMARK BASELINE ONLY: train the same recipe with a plain FP32 or FP64 step (no\n"
                            "rounding layer, no log, no commitment, not reproducible); prints steps/s and loss",
                            NULL, opts, NULL, 0, 0, -1, NULL};
    vt_cli_args a;
    int st = vt_cli_parse(&cmd, argc, argv, 2, &a);
    if (st >= 0) return st;
    vt_recipe rcp;
    if ((st = make_recipe("trainer plain", recipe, &sets, model, &rcp)) >= 0) return st;
    if (fp64 < 0) {
        fprintf(stderr, "trainer plain: --precision fp32 or --precision fp64 is required\n");
        return VT_EXIT_USAGE;
    }
    if (steps) rcp.steps = steps;
    char spec[VT_RECIPE_SPEC_MAX];
    vt_recipe_dataset_spec(&rcp, spec, sizeof spec);
    vt_dataset ds;
    vt_plain p;
    if (vt_data_load(spec, data_root, &ds) != VT_OK) {
        fprintf(stderr, "trainer plain: %s\n", vt_errmsg());
        return VT_EXIT_CANNOT;
    }
    vt_err e = vt_plain_init(&p, &rcp, ds.n, fp64);
    double loss = 0, t0 = vt_now();
    for (uint64_t s = 1; !e && s <= rcp.steps; s++) e = vt_plain_step(&p, &ds, &loss);
    double secs = vt_now() - t0;
    if (e) {
        fprintf(stderr, "trainer plain: %s\n", vt_errmsg());
        vt_plain_free(&p); /* safe after a failed init too */
        vt_data_free(&ds);
        return vt_cli_exit_for(e);
    }
    printf("plain %s step (benchmark baseline, not verifiable): %llu steps in %.2f s (%.1f steps/s)\n",
           fp64 ? "FP64" : "FP32", (unsigned long long)rcp.steps, secs, (double)rcp.steps / (secs + 1e-9));
    printf("final loss      %.4f\n", loss);
    vt_plain_free(&p);
    vt_data_free(&ds);
    return VT_EXIT_OK;
}
