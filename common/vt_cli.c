#include "vt_cli.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int vt_cli_exit_for(vt_err e)
{
    if (e == VT_OK) return VT_EXIT_OK;
    if (e == VT_ERR_DIVERGED) return VT_EXIT_REJECTED;
    if (e == VT_ERR_ARG) return VT_EXIT_USAGE;
    if (e == VT_ERR_INTERNAL) return VT_EXIT_INTERNAL;
    return VT_EXIT_CANNOT;
}

int vt_cli_exit_for_input(vt_err e)
{
    return e == VT_ERR_ARG ? VT_EXIT_CANNOT : vt_cli_exit_for(e);
}

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

double vt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void vt_progress_init(vt_progress *p, uint64_t start, uint64_t total, int quiet)
{
    p->enabled = !quiet && isatty(2);
    p->t0 = p->last = vt_now();
    p->total = total;
    p->start = start;
}

void vt_progress_update(vt_progress *p, const char *label, uint64_t done, const char *extra)
{
    if (!p->enabled) return;
    double t = vt_now();
    if (t - p->last < 0.1 && done != p->total) return;
    p->last = t;
    double rate = (double)(done - p->start) / (t - p->t0 + 1e-9);
    double eta = rate > 0 ? (double)(p->total - done) / rate : 0;
    fprintf(stderr, "\r%s %llu/%llu  %s  %.1f steps/s  ETA %.0fs   ", label, (unsigned long long)done,
            (unsigned long long)p->total, extra ? extra : "", rate, eta);
    fflush(stderr);
}

void vt_progress_end(vt_progress *p)
{
    if (p->enabled) fputc('\n', stderr);
}

/* Digits only (no sign, no spaces, no 0x): strtoull alone would take "-1", " 7" and "0x10". */
static int parse_digits(const char *t, size_t len, uint64_t *v)
{
    if (len == 0 || len > 20) return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        if (t[i] < '0' || t[i] > '9') return -1;
        unsigned d = (unsigned)(t[i] - '0');
        if (x > (UINT64_MAX - d) / 10) return -1; /* overflow */
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

vt_err vt_cli_u64(const char *opt, const char *text, uint64_t lo, uint64_t hi, uint64_t *out)
{
    uint64_t v = 0;
    if (!text || parse_digits(text, strlen(text), &v) != 0 || v < lo || v > hi)
        return vt_set_error(VT_ERR_ARG, "%s: \"%s\" is not an integer in %llu..%llu", opt, text ? text : "",
                            (unsigned long long)lo, (unsigned long long)hi);
    *out = v;
    return VT_OK;
}

vt_err vt_cli_u32(const char *opt, const char *text, uint32_t lo, uint32_t hi, uint32_t *out)
{
    uint64_t v = 0; /* set on success; gcc -O3 cannot see it through VT_FORWARD_IF_ERROR */
    VT_FORWARD_IF_ERROR(vt_cli_u64(opt, text, lo, hi, &v));
    *out = (uint32_t)v;
    return VT_OK;
}

vt_err vt_cli_int(const char *opt, const char *text, int lo, int hi, int *out)
{
    const char *t = text ? text : "";
    int neg = t[0] == '-';
    uint64_t v = 0;
    int ok = parse_digits(t + neg, strlen(t + neg), &v) == 0 && v <= (uint64_t)INT_MAX + (uint64_t)neg;
    long long x = ok ? (neg ? -(long long)v : (long long)v) : 0;
    if (!ok || x < lo || x > hi)
        return vt_set_error(VT_ERR_ARG, "%s: \"%s\" is not an integer in %d..%d", opt, t, lo, hi);
    *out = (int)x;
    return VT_OK;
}

vt_err vt_cli_size(const char *opt, const char *text, uint64_t *out)
{
    const char *t = text ? text : "";
    size_t n = 0;
    while (t[n] >= '0' && t[n] <= '9') n++;
    uint64_t v = 0, mul = 1;
    const char *u = t + n;
    int ok = parse_digits(t, n, &v) == 0;
    if (ok && *u) {
        const char *const units = "KMGT";
        const char *k = strchr(units, u[0]);
        ok = k && u[0] && (u[1] == 0 || strcmp(u + 1, "iB") == 0 || strcmp(u + 1, "B") == 0);
        if (ok)
            for (const char *q = units; q <= k; q++) mul *= 1024;
    }
    if (!ok || v == 0 || v > UINT64_MAX / mul)
        return vt_set_error(VT_ERR_ARG, "%s: \"%s\" is not a size (bytes, or a number with K, M, G or T: binary units)",
                            opt, t);
    *out = v * mul;
    return VT_OK;
}

vt_err vt_cli_step_op(const char *opt, const char *text, uint64_t *step, uint32_t *op)
{
    const char *t = text ? text : "", *colon = strchr(t, ':');
    uint64_t s, o;
    if (!colon || parse_digits(t, (size_t)(colon - t), &s) != 0 || s == 0 ||
        parse_digits(colon + 1, strlen(colon + 1), &o) != 0 || o == 0 || o > UINT32_MAX)
        return vt_set_error(VT_ERR_ARG, "%s: \"%s\" is not STEP:OP (two positive integers)", opt, t);
    *step = s;
    *op = (uint32_t)o;
    return VT_OK;
}

static pthread_mutex_t rej_mu_ = PTHREAD_MUTEX_INITIALIZER;
static long rej_second_ = -1;
static unsigned rej_lines_, rej_more_;

void vt_log_rejection(const char *who, const char *peer, const char *reason)
{
    long sec = (long)vt_now();
    pthread_mutex_lock(&rej_mu_);
    if (sec != rej_second_) {
        if (rej_more_) fprintf(stderr, "%s: ... %u more rejections in the last second\n", who, rej_more_);
        rej_second_ = sec, rej_lines_ = 0, rej_more_ = 0;
    }
    if (rej_lines_ < 20) {
        rej_lines_++;
        fprintf(stderr, "%s: rejected %s: %s\n", who, peer ? peer : "?", reason ? reason : "?");
    } else {
        rej_more_++;
    }
    pthread_mutex_unlock(&rej_mu_);
}
