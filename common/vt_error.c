#include "vt_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char vt_msg_[512];
/* where the last error was raised (VT_DEBUG >= 1; vt_error.h); file NULL: none */
static _Thread_local vt_fail_site vt_site_;

const char *vt_err_name(vt_err e)
{
    static const char *const names[VT_ERR_COUNT_] = {
        "ok", "argument", "out of memory", "i/o", "format", "limit", "diverged",
        "implausible log entry", "mismatch", "crypto", "database", "unsupported", "internal",
        "floating-point environment",
    };
    if ((int)e < 0 || e >= VT_ERR_COUNT_) return "unknown";
    return names[e];
}

const char *vt_errmsg(void)
{
    return vt_msg_[0] ? vt_msg_ : "no error";
}

/* Formats into a temporary and then copies: an argument may be vt_errmsg() itself (the message
 * being replaced), which a vsnprintf straight into vt_msg_ would read while writing it (undefined
 * behaviour; in practice the old message was lost). */
static void set_msg(const char *fmt, va_list ap)
{
    char tmp[sizeof vt_msg_];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    memcpy(vt_msg_, tmp, sizeof tmp);
}

/* (the name in parentheses: at VT_DEBUG >= 1 vt_set_error is also a macro that records the site) */
vt_err (vt_set_error)(vt_err e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_msg(fmt, ap);
    va_end(ap);
#if VT_DEBUG >= 1
    vt_site_ = (vt_fail_site){0}; /* a new message: the caller's macro records its site next */
#endif
    return e;
}

vt_err vti_err_site_note(vt_err e, const char *cond, const char *file, int line, const char *func)
{
    vt_site_ = (vt_fail_site){.cond = cond, .file = file, .line = line, .func = func};
    return e;
}

const vt_fail_site *vt_err_site(void)
{
    return &vt_site_;
}

void vt_err_site_print(const char *prog)
{
    const char *env = getenv("VT_DEBUG_ERRORS");
    int asked = env && strcmp(env, "1") == 0;
    if (VT_DEBUG < 1 && !asked) return;
    if (vt_site_.file) {
        if (vt_site_.cond)
            fprintf(stderr, "%s: debug: failed `%s` at %s:%d (%s)\n", prog, vt_site_.cond, vt_site_.file,
                    vt_site_.line, vt_site_.func ? vt_site_.func : "?");
        else
            fprintf(stderr, "%s: debug: error raised at %s:%d (%s)\n", prog, vt_site_.file, vt_site_.line,
                    vt_site_.func ? vt_site_.func : "?");
    } else if (asked) {
        fprintf(stderr, "%s: debug: no failure site recorded on this thread%s\n", prog,
                VT_DEBUG < 1 ? " (this build has VT_DEBUG=0: configure with -DVT_DEBUG=1)" : "");
    }
}

/* vt_msg_ = a sep b, truncated to the buffer; a or b may be vt_msg_ itself. */
static void join(const char *a, const char *sep, const char *b)
{
    char tmp[sizeof vt_msg_];
    size_t n = 0;
    const char *parts[3] = {a, sep, b};
    for (int i = 0; i < 3; i++)
        for (const char *c = parts[i]; *c && n + 1 < sizeof tmp; c++) tmp[n++] = *c;
    tmp[n] = 0;
    memcpy(vt_msg_, tmp, n + 1);
}

vt_err vt_error_prefix(vt_err e, const char *fmt, ...)
{
    char ctx[sizeof vt_msg_];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    join(ctx, ": ", vt_errmsg());
    return e;
}

vt_err vt_error_suffix(vt_err e, const char *fmt, ...)
{
    char ctx[sizeof vt_msg_];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    join(vt_errmsg(), " ", ctx);
    return e;
}

void vt_clear_error(void)
{
    vt_msg_[0] = 0;
    vt_site_ = (vt_fail_site){0};
}
