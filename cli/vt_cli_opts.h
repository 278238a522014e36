/* vt_cli_opts.h - the one command-line parser of the three programs (library vt_cliopts).
 *
 * Every subcommand describes itself by a vt_cli_cmd: its name, synopsis, positional arguments and a
 * table of options (vt_cli_opt: flags, strings, numbers, sizes, evaluation orders, choices,
 * repeated values, checked callbacks). vt_cli_parse reads argv through that table - `--name VALUE`,
 * `--name=VALUE`, unambiguous prefixes, positionals anywhere, `--` - and `--help` prints the help
 * generated from the same table (vt_cli_help): every option it takes, and the subcommand's default
 * evaluation order where it has one. argv is parsed here only; common/ keeps the number parsers
 * (vt_cli_u64 ...) that libraries and tests share.
 */
#ifndef VT_CLI_OPTS_H
#define VT_CLI_OPTS_H

#include <stdint.h>
#include <stdio.h>

#include "../common/vt_cli.h"
#include "../kernels/vt_kernels.h"

/* A program's usage text, written to f (stdout for --help, stderr on a usage error). */
typedef void vt_cli_usage_fn(FILE *f);

/* A usage error: prints the line FMT... (when FMT is not NULL) and then the usage (when usage is
 * not NULL) on stderr, and returns VT_EXIT_USAGE. */
int vt_cli_usage_error(vt_cli_usage_fn *usage, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Parses the whole of TEXT (the value of option OPT, e.g. "--order") as an evaluation order and
 * stores it in *out; on anything else leaves *out unchanged and returns VT_ERR_ARG with a message
 * naming the option and every valid order ("--order: \"bogus\" is not an evaluation order (blas,
 * forward, reverse, pairwise, permuted, sorted, split)"). */
vt_err vt_cli_order(const char *opt, const char *text, vt_order *out);

typedef enum {
    VT_OPT_FLAG,   /* no value: *(int *)p = 1 (or fn(p, NULL) when fn is set) */
    VT_OPT_STR,    /* *(const char **)p = the value */
    VT_OPT_INT,    /* *(int *)p, a decimal integer in [lo, hi] (vt_cli_int) */
    VT_OPT_U64,    /* *(uint64_t *)p, in [lo, hi] (vt_cli_u64) */
    VT_OPT_SIZE,   /* *(uint64_t *)p, bytes with K/M/G/T (vt_cli_size) */
    VT_OPT_ORDER,  /* *(vt_order *)p (vt_cli_order) */
    VT_OPT_CHOICE, /* *(int *)p = the index of the value in choices "a|b|c" */
    VT_OPT_LIST,   /* vt_cli_list *p: every value, in order (repeatable) */
    VT_OPT_FN,     /* fn(p, value): the caller's check (repeatable); its VT_ERR_ARG is a usage error */
} vt_cli_kind;

/* The values of a repeatable option, in command-line order (they point into argv). */
#define VT_CLI_LIST_MAX 256
typedef struct {
    int n;
    const char *v[VT_CLI_LIST_MAX];
} vt_cli_list;

typedef vt_err vt_cli_opt_fn(void *p, const char *value);

/* One option. Written with the macros below, e.g.
 *     const vt_cli_opt opts[] = {VT_OPT_I("--jobs", "N", "segments replayed at once (default 1)", 1, 256, &o.jobs),
 *                                VT_OPT_O("--order", &o.order), VT_OPT_END};   */
typedef struct {
    const char *name;    /* "--order" */
    vt_cli_kind kind;
    void *p;
    int64_t lo;
    uint64_t hi;
    const char *choices; /* VT_OPT_CHOICE: "cpu|cuda" */
    vt_cli_opt_fn *fn;   /* VT_OPT_FN (and a VT_OPT_FLAG with a callback) */
    const char *arg;     /* the value's name in --help ("N", "FILE"); NULL: a flag */
    const char *help;    /* --help's text; '\n' starts an indented continuation line */
    const char *old;     /* an old spelling still accepted, with a warning on stderr */
} vt_cli_opt;

#define VT_OPT_F(name, help, p) {(name), VT_OPT_FLAG, (p), 0, 0, NULL, NULL, NULL, (help), NULL}
#define VT_OPT_S(name, arg, help, p) {(name), VT_OPT_STR, (p), 0, 0, NULL, NULL, (arg), (help), NULL}
#define VT_OPT_I(name, arg, help, lo, hi, p) {(name), VT_OPT_INT, (p), (lo), (hi), NULL, NULL, (arg), (help), NULL}
#define VT_OPT_U(name, arg, help, lo, hi, p) {(name), VT_OPT_U64, (p), (lo), (hi), NULL, NULL, (arg), (help), NULL}
#define VT_OPT_Z(name, help, p) {(name), VT_OPT_SIZE, (p), 0, 0, NULL, NULL, "SIZE", (help), NULL}
#define VT_OPT_O(name, help, p) {(name), VT_OPT_ORDER, (p), 0, 0, NULL, NULL, "ORDER", (help), NULL}
#define VT_OPT_C(name, choices, help, p) {(name), VT_OPT_CHOICE, (p), 0, 0, (choices), NULL, (choices), (help), NULL}
#define VT_OPT_L(name, arg, help, p) {(name), VT_OPT_LIST, (p), 0, 0, NULL, NULL, (arg), (help), NULL}
#define VT_OPT_FN_(name, arg, help, fn, p) {(name), VT_OPT_FN, (p), 0, 0, NULL, (fn), (arg), (help), NULL}
#define VT_OPT_FLAGFN(name, help, fn, p) {(name), VT_OPT_FLAG, (p), 0, 0, NULL, (fn), NULL, (help), NULL}
/* an option's old spelling, accepted with "PROG: warning: OLD is deprecated; use NAME" */
#define VT_OPT_S_OLD(name, old, arg, help, p) {(name), VT_OPT_STR, (p), 0, 0, NULL, NULL, (arg), (help), (old)}
#define VT_OPT_END {NULL, VT_OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL}

#define VT_CLI_POS_MAX 4

/* A subcommand. */
typedef struct {
    const char *prog;     /* "trainer train": the prefix of every message */
    const char *synopsis; /* after prog in --help: "RUN_DIR --key KEYFILE [options]" */
    const char *about;    /* what it does, a paragraph ('\n' separated lines) */
    const char *order;    /* the default evaluation order, NULL: the subcommand takes none */
    const vt_cli_opt *opts;
    const vt_cli_opt *more; /* a second table (the test builds' options), or NULL */
    int min_pos, max_pos;   /* how many positional arguments it takes */
    /* the index of RUN_DIR among the positional arguments (-1: none): `--run DIR` is then accepted
     * in its place with the warning "--run is deprecated; give RUN_DIR as the argument" */
    int run_pos;
    const char *notes;    /* after the options in --help, or NULL */
} vt_cli_cmd;

/* The parsed positional arguments. */
typedef struct {
    int n;
    const char *v[VT_CLI_POS_MAX];
} vt_cli_args;

/* Parses argv[first..argc) (first: the index after the subcommand's name) through cmd's tables
 * into their variables and *pos. Returns -1 when the command is to run; otherwise the exit status:
 * VT_EXIT_OK after --help (the help on stdout), VT_EXIT_USAGE after a usage error (one line on
 * stderr, "PROG: ...", and a pointer to --help). */
int vt_cli_parse(const vt_cli_cmd *cmd, int argc, char **argv, int first, vt_cli_args *pos);

/* The help of cmd generated from its tables: synopsis, about, every option, the default order. */
void vt_cli_help(const vt_cli_cmd *cmd, FILE *f);

/* One subcommand of a program: its name, a one-line summary and the function that runs it. */
typedef struct {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[1] is the subcommand's name */
    int needs_env;                     /* checks the floating-point environment first */
} vt_cli_sub;

/* The programs' `--threads N` (or --threads=N), wherever it stands before a `--`: removed from
 * argv (argc updated), then vt_par_configure(N) (common/vt_par.h: the pool of N threads, a one-thread
 * BLAS; N = 0 without the option). Returns 0, or -1 with *bad set to the offending text for a value
 * that is not 1 .. VT_PAR_MAX. vt_cli_main calls it first. */
int vt_cli_take_threads(int *argc, char **argv, const char **bad);
/* A program's main: `--threads N` taken anywhere (common/vt_par.h), the subcommand found in subs
 * (NULL-terminated), the floating-point environment checked for those that compute, and on failure
 * the site of the error printed (vt_err_site_print). `PROG`, `PROG --help` and `PROG help` list the
 * subcommands; `PROG SUB --help` gives SUB's own help. */
int vt_cli_main(const char *prog, const char *about, const vt_cli_sub *subs, int argc, char **argv);

/* The `PROG keygen KEYFILE [--force]` subcommand (argv[1] is "keygen"): writes an Ed25519 key
 * pair, KEYFILE (secret, mode 0600) and KEYFILE.pub, refusing to overwrite either without --force,
 * and prints "wrote KEYFILE (secret, mode 0600) and KEYFILE.pub" (then "fingerprint HEX" when
 * fingerprint is set). Returns the program's exit status. */
int vt_cli_keygen(const char *prog, int argc, char **argv, int fingerprint);

/* Common option texts. */
/* the help of --max-memory where a run's model is loaded (eval, sample, export) */
#define VT_HELP_MAX_MEMORY "the memory budget (default: the available memory; a run that needs more: exit 2)"
#define VT_HELP_DATA_DIR                                                                                           \
    "dataset root (default: $VT_DATA_DIR or the repository's data/); a relative path in\n"                        \
    "dataset=safetensors:PATH, npy:X.npy,Y.npy, text:PATH or file:PATH is taken from it\n"                       \
    "(else from the current directory)"
#define VT_HELP_BACKEND "cpu (default) or cuda: the GEMMs and their rounding on the GPU (the same bits;\ndocs/cuda.md)"

#endif
