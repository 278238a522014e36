#include "vt_cli_opts.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../merkle/vt_sign.h"

vt_err vt_cli_order(const char *opt, const char *text, vt_order *out)
{
    vt_order o;
    if (text && vt_order_parse(text, &o) == VT_OK) {
        *out = o;
        return VT_OK;
    }
    /* every order by name, from the one list of names (kernels/), so the message cannot go stale */
    char names[160] = "";
    size_t len = 0;
    for (int i = 0; i < (int)VT_ORDER_COUNT && len < sizeof names; i++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", vt_order_name((vt_order)i));
    return vt_set_error(VT_ERR_ARG, "%s: \"%.40s\" is not an evaluation order (%s)", opt, text ? text : "", names);
}

int vt_cli_opt_parse(const char *prog, const vt_cli_opt *table, int c, const char *arg, vt_cli_usage_fn *usage)
{
    const vt_cli_opt *t = table;
    while (t->name && t->c != c) t++;
    if (!t->name) return vt_cli_usage_error(usage, NULL);
    vt_err e = t->order ? vt_cli_order(t->name, arg, t->order)
               : t->u   ? vt_cli_u64(t->name, arg, (uint64_t)t->lo, t->hi, t->u)
                        : vt_cli_int(t->name, arg, (int)t->lo, (int)t->hi, t->i);
    if (e != VT_OK) {
        fprintf(stderr, "%s: %s\n", prog, vt_errmsg());
        return VT_EXIT_USAGE;
    }
    return VT_EXIT_OK;
}

int vt_cli_keygen(const char *prog, int argc, char **argv, vt_cli_usage_fn *usage, unsigned flags)
{
    int force = 0;
    const char *path = NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--force") == 0)
            force = 1;
        else if (argv[i][0] == '-' || path)
            return vt_cli_usage_error(usage, NULL);
        else
            path = argv[i];
    }
    if (!path) return vt_cli_usage_error(usage, NULL);
    char fpr[VT_SIGN_FPR_HEX_LEN + 1];
    vt_err e = vt_sign_keygen_files(path, force, (flags & VT_CLI_KEYGEN_FINGERPRINT) ? fpr : NULL);
    if (e) {
        fprintf(stderr, "%s keygen: %s\n", prog, vt_errmsg());
        return vt_cli_exit_for(e);
    }
    printf("wrote %s (secret, mode 0600) and %s.pub\n", path, path);
    if (flags & VT_CLI_KEYGEN_FINGERPRINT) printf("fingerprint %s\n", fpr);
    return VT_EXIT_OK;
}
