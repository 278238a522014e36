/* vt_cli_opts.h - the command-line pieces the three programs share that need libraries above
 * common/: evaluation orders (kernels/), key pairs (merkle/), and option tables of numbers and
 * orders. common/ stays below every library, so these live here (library vt_cliopts).
 */
#ifndef VT_CLI_OPTS_H
#define VT_CLI_OPTS_H

#include <stdint.h>

#include "../common/vt_cli.h"
#include "../kernels/vt_kernels.h"

/* Parses the whole of TEXT (the value of option OPT, e.g. "--order") as an evaluation order and
 * stores it in *out; on anything else leaves *out unchanged and returns VT_ERR_ARG with a message
 * naming the option and every valid order, in the form of vt_cli_u64's ("--order: \"bogus\" is
 * not an evaluation order (blas, forward, reverse, pairwise, permuted, sorted, split)"). */
vt_err vt_cli_order(const char *opt, const char *text, vt_order *out);

/* One option of a table for vt_cli_opt_parse: the option getopt_long returns as C, named NAME in
 * messages, whose value goes through exactly one of i (an int in [lo, hi]), u (a uint64_t in
 * [lo, hi], lo >= 0) or order (an evaluation order). Written with the macros below, e.g.
 *     const vt_cli_opt opts[] = {VT_CLI_INT('j', "--jobs", 1, 256, &o.jobs),
 *                                VT_CLI_ORDER('o', "--order", &o.order), VT_CLI_END};   */
typedef struct {
    int c;
    const char *name;
    int64_t lo;
    uint64_t hi;
    int *i;
    uint64_t *u;
    vt_order *order;
} vt_cli_opt;

#define VT_CLI_INT(c, name, lo, hi, p) {(c), (name), (lo), (hi), (p), NULL, NULL}
#define VT_CLI_U64(c, name, lo, hi, p) {(c), (name), (lo), (hi), NULL, (p), NULL}
#define VT_CLI_ORDER(c, name, p) {(c), (name), 0, 0, NULL, NULL, (p)}
#define VT_CLI_END {0, NULL, 0, 0, NULL, NULL, NULL}

/* For the `default:` of a getopt_long switch: when C is an option of TABLE, parses ARG into it
 * and returns VT_EXIT_OK; on a bad value prints "PROG: <the message of vt_cli_int, vt_cli_u64 or
 * vt_cli_order>" and returns VT_EXIT_USAGE; when C is in no entry (getopt_long's '?', having
 * already said why), prints the usage (when usage is not NULL) and returns VT_EXIT_USAGE. */
int vt_cli_opt_parse(const char *prog, const vt_cli_opt *table, int c, const char *arg, vt_cli_usage_fn *usage);

/* Flags of vt_cli_keygen. */
enum {
    VT_CLI_KEYGEN_FINGERPRINT = 1, /* also print "fingerprint HEX" of the new public key */
};

/* The `PROG keygen KEYFILE [--force]` subcommand (argv[1] is "keygen"; KEYFILE and --force in
 * any order): writes an Ed25519 key pair, KEYFILE (secret, mode 0600) and KEYFILE.pub, refusing to
 * overwrite either without --force, and prints "wrote KEYFILE (secret, mode 0600) and
 * KEYFILE.pub" (then "fingerprint HEX" with VT_CLI_KEYGEN_FINGERPRINT). Any other argument, or
 * no KEYFILE, prints the usage and returns VT_EXIT_USAGE; a failure prints "PROG keygen: MESSAGE"
 * and returns vt_cli_exit_for of it. Returns the program's exit status. */
int vt_cli_keygen(const char *prog, int argc, char **argv, vt_cli_usage_fn *usage, unsigned flags);

#endif
