/* trainer - trains a recipe verifiably and commits to every step.
 *
 *   trainer keygen KEYFILE [--force]
 *   trainer train --run DIR --key KEYFILE [--recipe FILE] [--set key=value]... [--order ORDER]
 *                 [--data-dir DIR] [--resume] [--quiet]
 *   trainer plain [--recipe FILE] [--set key=value]... --precision fp32|fp64   (benchmark baseline)
 *
 * Exit status: 0 success, 1 training failed (diverged), 2 input/output error, 64 usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_cli.h"
#include "../common/vt_hash.h"
#include "../merkle/vt_sign.h"
#include "vt_train.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage:\n"
            "  trainer keygen KEYFILE [--force]\n"
            "      write an Ed25519 key pair: KEYFILE (secret, mode 0600) and KEYFILE.pub\n"
            "  trainer train --run DIR --key KEYFILE [options]\n"
            "      --recipe FILE     JSON recipe (default: the built-in MNIST MLP recipe)\n"
            "      --set KEY=VALUE   override one recipe key (repeatable), e.g. --set steps=100\n"
            "      --order ORDER     evaluation order: blas (default), forward, reverse, pairwise,\n"
            "                        permuted, sorted\n"
            "      --data-dir DIR    dataset root (default: $VT_DATA_DIR or the repository's data/)\n"
            "      --resume          continue an interrupted run from its last checkpoint\n"
            "      --quiet           no progress line\n"
            "      --stop-after S    stop after step S without committing (as a crash would)\n"
            "      --cheat-flip-weight S   TESTING ONLY: act as a cheating trainer that flips a weight\n"
            "                        bit after step S and commits the result\n"
            "  trainer recipe [--recipe FILE] [--set KEY=VALUE]...   print the effective recipe\n"
            "exit status: 0 ok, 1 training diverged, 2 input/output error, 64 usage error\n");
}

static int exit_for(vt_err e)
{
    if (e == VT_OK) return VT_EXIT_OK;
    if (e == VT_ERR_DIVERGED) return VT_EXIT_REJECTED;
    if (e == VT_ERR_ARG) return VT_EXIT_USAGE;
    return VT_EXIT_CANNOT;
}

static int cmd_keygen(int argc, char **argv)
{
    int force = 0;
    const char *path = NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--force") == 0)
            force = 1;
        else if (argv[i][0] == '-' || path) {
            usage(stderr);
            return VT_EXIT_USAGE;
        } else
            path = argv[i];
    }
    if (!path) {
        usage(stderr);
        return VT_EXIT_USAGE;
    }
    vt_keypair kp;
    char pub[4096], fpr[VT_SIGN_FPR_HEX_LEN + 1];
    snprintf(pub, sizeof pub, "%s.pub", path);
    vt_err e = vt_sign_init();
    if (!e) e = vt_sign_keypair(&kp);
    if (!e) e = vt_sign_write_secret_key(path, &kp, force);
    if (!e) e = vt_sign_write_public_key(pub, kp.pk, force);
    if (!e) e = vt_sign_fingerprint(kp.pk, fpr);
    vt_keypair_wipe(&kp);
    if (e) {
        fprintf(stderr, "trainer keygen: %s\n", vt_errmsg());
        return exit_for(e);
    }
    printf("wrote %s (secret, mode 0600) and %s\nfingerprint %s\n", path, pub, fpr);
    return VT_EXIT_OK;
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
        {"stop-after", required_argument, 0, 'S'}, {"help", no_argument, 0, 'h'},
        {"cheat-flip-weight", required_argument, 0, 'C'},
        {0, 0, 0, 0}};
    vt_recipe_default(rc);
    memset(o, 0, sizeof *o);
    o->order = VT_ORDER_BLAS;
    /* the recipe file first, overrides after, whatever their order on the command line */
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if (c == 'R' && vt_recipe_load_file(rc, optarg) != VT_OK) {
            fprintf(stderr, "trainer: %s\n", vt_errmsg());
            return VT_EXIT_CANNOT;
        }
        if (c == '?') {
            usage(stderr);
            return VT_EXIT_USAGE;
        }
    }
    optind = 2;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'r': o->run_dir = optarg; break;
        case 'k': o->key_path = optarg; break;
        case 'd': o->data_root = optarg; break;
        case 'u': o->resume = 1; break;
        case 'q': o->quiet = 1; break;
        case 'S': o->stop_after = strtoull(optarg, NULL, 10); break;
        case 'C': o->cheat_flip_step = strtoull(optarg, NULL, 10); break;
        case 'h': usage(stdout); return VT_EXIT_OK;
        case 's':
            if (vt_recipe_set(rc, optarg) != VT_OK) {
                fprintf(stderr, "trainer: %s\n", vt_errmsg());
                return VT_EXIT_USAGE;
            }
            break;
        case 'o':
            if (vt_order_parse(optarg, &o->order) != VT_OK) {
                fprintf(stderr, "trainer: %s\n", vt_errmsg());
                return VT_EXIT_USAGE;
            }
            break;
        default: break;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "trainer: unexpected argument \"%s\"\n", argv[optind]);
        return VT_EXIT_USAGE;
    }
    if (vt_recipe_validate(rc) != VT_OK) {
        fprintf(stderr, "trainer: %s\n", vt_errmsg());
        return VT_EXIT_USAGE;
    }
    return -1;
}

static int cmd_recipe(int argc, char **argv)
{
    vt_recipe rc;
    vt_train_opts o;
    int st = parse_train(argc, argv, &rc, &o);
    if (st >= 0) return st;
    char *js = NULL;
    if (vt_recipe_to_json(&rc, &js) != VT_OK) {
        fprintf(stderr, "trainer: %s\n", vt_errmsg());
        return VT_EXIT_CANNOT;
    }
    printf("%s\n", js);
    free(js);
    return VT_EXIT_OK;
}

static int cmd_train(int argc, char **argv)
{
    vt_recipe rc;
    vt_train_opts o;
    int st = parse_train(argc, argv, &rc, &o);
    if (st >= 0) return st;
    if (!o.run_dir || !o.key_path) {
        fprintf(stderr, "trainer train: --run DIR and --key KEYFILE are required\n");
        usage(stderr);
        return VT_EXIT_USAGE;
    }
    vt_train_result res;
    vt_err e = vt_train_run(&rc, &o, &res);
    if (e) {
        fprintf(stderr, "trainer: %s\n", vt_errmsg());
        return exit_for(e);
    }
    char root[65];
    vt_hex(res.root, 32, root);
    if (!res.committed) {
        printf("stopped after step %llu (no commitment written; continue with --resume)\n",
               (unsigned long long)res.steps);
        return VT_EXIT_OK;
    }
    printf("trained %llu steps in %.1f s (%.1f steps/s)%s\n", (unsigned long long)res.steps, res.seconds,
           (double)(res.steps - res.resumed_from) / (res.seconds + 1e-9), o.resume ? " after resuming" : "");
    printf("final loss      %.4f\n", (double)res.final_loss);
    uint64_t nsteps = res.steps - res.resumed_from;
    double per_step = (double)res.log_bytes / (double)(nsteps + (o.resume ? 0 : 1));
    double dense = (double)res.rounded / (double)(nsteps ? nsteps : 1) * 0.2; /* 1.6 bits per rounded element */
    printf("log entries     %llu over %llu rounded elements (fraction %.2e)\n", (unsigned long long)res.log_entries,
           (unsigned long long)res.rounded, (double)res.log_entries / (double)(res.rounded ? res.rounded : 1));
    printf("log size        %.0f bytes/step compressed; dense 1.6-bit baseline %.0f bytes/step (%.2f%%)\n", per_step,
           dense, dense > 0 ? 100.0 * per_step / dense : 0.0);
    printf("merkle root     %s\n", root);
    printf("commitment      %s/commitment.vtc\n", o.run_dir);
    return VT_EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return VT_EXIT_USAGE;
    }
    if (strcmp(argv[1], "keygen") == 0) return cmd_keygen(argc, argv);
    if (strcmp(argv[1], "train") == 0) return cmd_train(argc, argv);
    if (strcmp(argv[1], "recipe") == 0) return cmd_recipe(argc, argv);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return VT_EXIT_OK;
    }
    fprintf(stderr, "trainer: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return VT_EXIT_USAGE;
}
