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

vt_err vt_set_error(vt_err e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(vt_msg_, sizeof vt_msg_, fmt, ap);
    va_end(ap);
    return e;
}

void vt_clear_error(void)
{
    vt_msg_[0] = 0;
}
