#include "vt_cli_opts.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_env.h"
#include "../common/vt_par.h"
#include "../merkle/vt_sign.h"

int vt_cli_usage_error(vt_cli_usage_fn *usage, const char *fmt, ...)
{
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
    if (usage) usage(stderr);
    return VT_EXIT_USAGE;
}

static void order_names(char *names, size_t cap)
{
    size_t len = 0;
    names[0] = 0;
    for (int i = 0; i < (int)VT_ORDER_COUNT && len < cap; i++)
        len += (size_t)snprintf(names + len, cap - len, "%s%s", i ? ", " : "", vt_order_name((vt_order)i));
}

vt_err vt_cli_order(const char *opt, const char *text, vt_order *out)
{
    vt_order o;
    if (text && vt_order_parse(text, &o) == VT_OK) {
        *out = o;
        return VT_OK;
    }
    /* every order by name, from the one list of names (kernels/), so the message cannot go stale */
    char names[160];
    order_names(names, sizeof names);
    return vt_set_error(VT_ERR_ARG, "%s: \"%.40s\" is not an evaluation order (%s)", opt, text ? text : "", names);
}

/* --- help ------------------------------------------------------------------------------------ */

#define HELP_COL 26 /* the column where an option's text starts */

static void help_text(FILE *f, const char *text, int col)
{
    for (const char *t = text; t && *t;) {
        const char *nl = strchr(t, '\n');
        int len = nl ? (int)(nl - t) : (int)strlen(t);
        fprintf(f, "%*s%.*s\n", t == text ? 0 : col, "", len, t);
        t = nl ? nl + 1 : t + len;
    }
}

static void help_opts(FILE *f, const vt_cli_opt *t)
{
    for (; t && t->name; t++) {
        char head[96];
        int n = snprintf(head, sizeof head, "  %s%s%s", t->name, t->arg ? " " : "", t->arg ? t->arg : "");
        if (n < 0) continue;
        if (n >= HELP_COL - 1)
            fprintf(f, "%s\n%*s", head, HELP_COL, "");
        else
            fprintf(f, "%-*s", HELP_COL, head);
        if (t->kind == VT_OPT_ORDER) {
            char names[160];
            order_names(names, sizeof names);
            help_text(f, t->help ? t->help : "the evaluation order", HELP_COL);
            fprintf(f, "%*sORDER: %s\n", HELP_COL, "", names);
        } else {
            help_text(f, t->help ? t->help : "", HELP_COL);
            if (!t->help) fputc('\n', f);
        }
        if (t->old) fprintf(f, "%*s(%s: the old spelling, still accepted with a warning)\n", HELP_COL, "", t->old);
    }
}

void vt_cli_help(const vt_cli_cmd *cmd, FILE *f)
{
    fprintf(f, "usage: %s %s\n", cmd->prog, cmd->synopsis ? cmd->synopsis : "[options]");
    if (cmd->about) help_text(f, cmd->about, 0);
    fprintf(f, "options:\n");
    help_opts(f, cmd->opts);
    help_opts(f, cmd->more);
    fprintf(f, "%-*s%s\n", HELP_COL, "  --threads N",
            "the threads of its loops and BLAS (default: VT_THREADS, else the CPUs); the bits do not");
    fprintf(f, "%*s%s\n", HELP_COL, "", "depend on it");
    fprintf(f, "%-*s%s\n", HELP_COL, "  --help", "this text");
    if (cmd->run_pos >= 0)
        fprintf(f, "RUN_DIR: the run directory (`--run DIR` is deprecated, still accepted with a warning)\n");
    if (cmd->order) fprintf(f, "default evaluation order: %s\n", cmd->order);
    if (cmd->notes) help_text(f, cmd->notes, 0);
}

/* --- parsing --------------------------------------------------------------------------------- */

/* VT_CLI_DEPRECATED=quiet: no deprecation warnings (for a user's scripts that still give the old
 * spellings and read stderr; README.md "Usage") */
static int deprecation_quiet(void)
{
    const char *v = getenv("VT_CLI_DEPRECATED");
    return v && strcmp(v, "quiet") == 0;
}

static int bad_usage(const vt_cli_cmd *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int bad_usage(const vt_cli_cmd *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", cmd->prog);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(`%s --help` lists its options)\n", cmd->prog);
    return VT_EXIT_USAGE;
}

/* The option NAME (len characters) in the tables: exact, else the one it is a prefix of. *old: the
 * old spelling matched. */
static const vt_cli_opt *find_opt(const vt_cli_cmd *cmd, const char *name, size_t len, int *old, int *ambiguous)
{
    const vt_cli_opt *tabs[2] = {cmd->opts, cmd->more}, *pre = NULL;
    int npre = 0;
    *old = 0, *ambiguous = 0;
    for (int k = 0; k < 2; k++)
        for (const vt_cli_opt *t = tabs[k]; t && t->name; t++) {
            if (strlen(t->name) == len && strncmp(t->name, name, len) == 0) return t;
            if (t->old && strlen(t->old) == len && strncmp(t->old, name, len) == 0) {
                *old = 1;
                return t;
            }
            if (strncmp(t->name, name, len) == 0) pre = t, npre++;
        }
    if (npre > 1) *ambiguous = 1;
    return npre == 1 ? pre : NULL;
}

static int set_value(const vt_cli_cmd *cmd, const vt_cli_opt *t, const char *v)
{
    vt_err e = VT_OK;
    switch (t->kind) {
    case VT_OPT_FLAG: e = t->fn ? t->fn(t->p, NULL) : (*(int *)t->p = 1, VT_OK); break;
    case VT_OPT_STR: *(const char **)t->p = v; break;
    case VT_OPT_INT: e = vt_cli_int(t->name, v, (int)t->lo, (int)t->hi, (int *)t->p); break;
    case VT_OPT_U64: e = vt_cli_u64(t->name, v, (uint64_t)t->lo, t->hi, (uint64_t *)t->p); break;
    case VT_OPT_SIZE: e = vt_cli_size(t->name, v, (uint64_t *)t->p); break;
    case VT_OPT_ORDER: e = vt_cli_order(t->name, v, (vt_order *)t->p); break;
    case VT_OPT_CHOICE: {
        int i = 0;
        for (const char *c = t->choices; c && *c; i++) {
            const char *bar = strchr(c, '|');
            size_t len = bar ? (size_t)(bar - c) : strlen(c);
            if (strlen(v) == len && strncmp(c, v, len) == 0) {
                *(int *)t->p = i;
                return VT_EXIT_OK;
            }
            c = bar ? bar + 1 : c + len;
        }
        return bad_usage(cmd, "%s %s: expected %s", t->name, v, t->choices);
    }
    case VT_OPT_LIST: {
        vt_cli_list *l = t->p;
        if (l->n == VT_CLI_LIST_MAX) return bad_usage(cmd, "%s: at most %d times", t->name, VT_CLI_LIST_MAX);
        l->v[l->n++] = v;
        break;
    }
    case VT_OPT_FN: e = t->fn(t->p, v); break;
    }
    if (e == VT_OK) return VT_EXIT_OK;
    /* the number parsers' messages name the option; a callback's may not */
    if (t->kind == VT_OPT_FN || t->kind == VT_OPT_FLAG)
        fprintf(stderr, "%s: %s%s%s: %s\n", cmd->prog, t->name, v ? " " : "", v ? v : "", vt_errmsg());
    else
        fprintf(stderr, "%s: %s\n", cmd->prog, vt_errmsg());
    return e == VT_ERR_ARG ? VT_EXIT_USAGE : vt_cli_exit_for(e);
}

int vt_cli_parse(const vt_cli_cmd *cmd, int argc, char **argv, int first, vt_cli_args *pos)
{
    memset(pos, 0, sizeof *pos);
    if (cmd->max_pos > VT_CLI_POS_MAX || (cmd->run_pos >= 0 && (cmd->max_pos == 0 || cmd->run_pos >= cmd->max_pos))) {
        fprintf(stderr, "%s: internal error: the command's table has %d positional arguments, RUN_DIR at %d\n",
                cmd->prog, cmd->max_pos, cmd->run_pos);
        return VT_EXIT_INTERNAL;
    }
    const char *run = NULL;
    int only_pos = 0;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || a[1] == 0) { /* a positional argument ("-" included) */
            if (pos->n >= cmd->max_pos || pos->n >= VT_CLI_POS_MAX)
                return bad_usage(cmd, "unexpected argument \"%s\"", a);
            if (!*a) return bad_usage(cmd, "an empty argument");
            pos->v[pos->n++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            vt_cli_help(cmd, stdout);
            return VT_EXIT_OK;
        }
        if (a[1] != '-') return bad_usage(cmd, "unknown option \"%s\"", a);
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        if (cmd->run_pos >= 0 && len == 5 && strncmp(a, "--run", 5) == 0) {
            const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (!v) return bad_usage(cmd, "--run needs a value");
            if (!*v) return bad_usage(cmd, "--run: an empty value");
            if (run) return bad_usage(cmd, "--run given twice (%s, %s): give RUN_DIR once", run, v);
            if (!deprecation_quiet())
                fprintf(stderr, "%s: warning: --run is deprecated; give RUN_DIR as the argument\n", cmd->prog);
            run = v;
            continue;
        }
        int old, amb;
        const vt_cli_opt *t = find_opt(cmd, a, len, &old, &amb);
        if (!t) return bad_usage(cmd, amb ? "ambiguous option \"%.*s\"" : "unknown option \"%.*s\"", (int)len, a);
        if (old && !deprecation_quiet())
            fprintf(stderr, "%s: warning: %s is deprecated; use %s\n", cmd->prog, t->old, t->name);
        const char *v = NULL;
        if (t->arg) {
            v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (!v) return bad_usage(cmd, "%s needs a value (%s)", t->name, t->arg);
            if (!*v) return bad_usage(cmd, "%s: an empty value (%s)", t->name, t->arg);
        } else if (eq) {
            return bad_usage(cmd, "%s takes no value", t->name);
        }
        int st = set_value(cmd, t, v);
        if (st != VT_EXIT_OK) return st;
    }
    if (run) { /* --run DIR: RUN_DIR at its place among the positional arguments */
        if (pos->n >= cmd->max_pos) return bad_usage(cmd, "--run %s and RUN_DIR %s: give RUN_DIR once", run, pos->v[cmd->run_pos < pos->n ? cmd->run_pos : pos->n - 1]);
        int at = cmd->run_pos < pos->n ? cmd->run_pos : pos->n;
        for (int k = pos->n; k > at; k--) pos->v[k] = pos->v[k - 1];
        pos->v[at] = run;
        pos->n++;
    }
    if (pos->n < cmd->min_pos) {
        fprintf(stderr, "%s: missing argument: usage: %s %s\n", cmd->prog, cmd->prog, cmd->synopsis ? cmd->synopsis : "");
        fprintf(stderr, "(`%s --help` lists its options)\n", cmd->prog);
        return VT_EXIT_USAGE;
    }
    return -1;
}

/* --- a program's main ------------------------------------------------------------------------ */

static void list_subs(FILE *f, const char *prog, const char *about, const vt_cli_sub *subs)
{
    fprintf(f, "usage: %s COMMAND [options]   (%s COMMAND --help: its options)\n", prog, prog);
    if (about) help_text(f, about, 0);
    fprintf(f, "commands:\n");
    for (const vt_cli_sub *s = subs; s->name; s++) {
        fprintf(f, "  %-18s", s->name);
        help_text(f, s->summary, 20);
    }
    fprintf(f, "every command takes --threads N (the threads of its loops and BLAS; default VT_THREADS, else\n"
               "the CPUs; exact rounding's bits do not depend on it)\n"
               "exit status: 0 ok, 1 a finding (rejected, diverged, lost), 2 unreadable, corrupt or hostile input\n"
               "or I/O error, 64 usage error, 70 internal failure (README.md \"Exit statuses\")\n");
}

static int main_dispatch(const char *prog, const char *about, const vt_cli_sub *subs, int argc, char **argv)
{
    if (argc < 2) {
        list_subs(stderr, prog, about, subs);
        return VT_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        list_subs(stdout, prog, about, subs);
        return VT_EXIT_OK;
    }
    for (const vt_cli_sub *s = subs; s->name; s++) {
        if (strcmp(argv[1], s->name) != 0) continue;
        /* the floating-point environment, e.g. FTZ set by a -ffast-math CBLAS at load: refused, exit 2 */
        if (s->needs_env && vt_env_cli_check(prog)) return VT_EXIT_CANNOT;
        return s->run(argc, argv);
    }
    fprintf(stderr, "%s: unknown command \"%s\"\n", prog, argv[1]);
    list_subs(stderr, prog, about, subs);
    return VT_EXIT_USAGE;
}

int vt_cli_take_threads(int *argc, char **argv, const char **bad)
{
    int n = 0, w = 1, rest = 0;
    for (int i = 1; i < *argc; i++) {
        const char *v = NULL;
        if (rest || strcmp(argv[i], "--") == 0) { /* after "--": arguments, never options */
            rest = 1;
            argv[w++] = argv[i];
            continue;
        }
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < *argc) v = argv[++i];
        else if (strncmp(argv[i], "--threads=", 10) == 0) v = argv[i] + 10;
        else if (strcmp(argv[i], "--threads") == 0) v = "";
        if (!v) {
            argv[w++] = argv[i];
            continue;
        }
        char *end = NULL;
        long t = strtol(v, &end, 10);
        if (!*v || *end || t < 1 || t > VT_PAR_MAX) {
            *bad = v;
            return -1;
        }
        n = (int)t;
    }
    argv[w] = NULL;
    *argc = w;
    vt_par_configure(n);
    return 0;
}

int vt_cli_main(const char *prog, const char *about, const vt_cli_sub *subs, int argc, char **argv)
{
    const char *bad = NULL; /* --threads N, wherever it stands */
    if (vt_cli_take_threads(&argc, argv, &bad)) {
        fprintf(stderr, "%s: --threads %s: expected a number of threads from 1 to %d\n", prog, bad, VT_PAR_MAX);
        return VT_EXIT_USAGE;
    }
    int st = main_dispatch(prog, about, subs, argc, argv);
    /* after the error message: where the error was raised (VT_DEBUG >= 1 or VT_DEBUG_ERRORS=1) */
    if (st != VT_EXIT_OK) vt_err_site_print(prog);
    return st;
}

/* --- keygen ---------------------------------------------------------------------------------- */

int vt_cli_keygen(const char *prog, int argc, char **argv, int fingerprint)
{
    int force = 0;
    char name[48];
    snprintf(name, sizeof name, "%s keygen", prog);
    const vt_cli_opt opts[] = {VT_OPT_F("--force", "overwrite an existing KEYFILE or KEYFILE.pub", &force), VT_OPT_END};
    const vt_cli_cmd cmd = {name, "KEYFILE [--force]",
                            "write an Ed25519 key pair: KEYFILE (secret, mode 0600) and KEYFILE.pub",
                            NULL, opts, NULL, 1, 1, -1, NULL};
    vt_cli_args a;
    int st = vt_cli_parse(&cmd, argc, argv, 2, &a);
    if (st >= 0) return st;
    const char *path = a.v[0];
    char fpr[VT_SIGN_FPR_HEX_LEN + 1];
    vt_err e = vt_sign_keygen_files(path, force, fingerprint ? fpr : NULL);
    if (e) {
        fprintf(stderr, "%s keygen: %s\n", prog, vt_errmsg());
        return vt_cli_exit_for(e);
    }
    printf("wrote %s (secret, mode 0600) and %s.pub\n", path, path);
    if (fingerprint) printf("fingerprint %s\n", fpr);
    return VT_EXIT_OK;
}
