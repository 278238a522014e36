#include "vt_error.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char vt_msg_[512];

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

vt_err vt_set_error(vt_err e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_msg(fmt, ap);
    va_end(ap);
    return e;
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
}
