#include "vt_cli.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
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

double vt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void vt_abstime_after(struct timespec *ts, int64_t ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) ts->tv_sec++, ts->tv_nsec -= 1000000000L;
}

double vt_progress_interval(void)
{
    const char *v = getenv("VT_PROGRESS_INTERVAL");
    if (!v || !*v) return VT_PROGRESS_INTERVAL_DEFAULT;
    char *end = NULL;
    double d = strtod(v, &end);
    if (!end || *end || !(d >= 0 && d <= 86400)) return VT_PROGRESS_INTERVAL_DEFAULT;
    return d;
}

void vt_format_duration(double s, char *out, size_t cap)
{
    if (!(s >= 0)) s = 0;
    if (s > 99999.0 * 3600) s = 99999.0 * 3600;
    unsigned long long t = (unsigned long long)(s + 0.5);
    if (t >= 3600)
        snprintf(out, cap, "%lluh%02llum", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(out, cap, "%llum%02llus", t / 60, t % 60);
    else
        snprintf(out, cap, "%llus", t);
}

void vt_progress_init(vt_progress *p, uint64_t start, uint64_t total, int quiet)
{
    memset(p, 0, sizeof *p);
    p->tty = isatty(2);
    p->every = p->tty ? 0.1 : vt_progress_interval();
    p->enabled = !quiet && (p->tty || p->every > 0);
    p->t0 = p->last = vt_now();
    p->total = total;
    p->start = p->done = start;
}

static void progress_write(vt_progress *p, double t)
{
    char line[256], eta[24], el[24];
    uint64_t n = p->done > p->start ? p->done - p->start : 0;
    double dt = t - p->t0, rate = dt > 0 ? (double)n / dt : 0;
    if (rate > 0 && p->total >= p->done)
        vt_format_duration((double)(p->total - p->done) / rate, eta, sizeof eta);
    else
        snprintf(eta, sizeof eta, "--");
    vt_format_duration(dt, el, sizeof el);
    double pct = p->total ? 100.0 * (double)p->done / (double)p->total : 100.0;
    int len = snprintf(line, sizeof line, "%s %llu/%llu (%.0f%%)%s%s  %.*f steps/s  ETA %s  elapsed %s", p->label,
                       (unsigned long long)p->done, (unsigned long long)p->total, pct, p->extra[0] ? "  " : "",
                       p->extra, rate < 10 ? 2 : 1, rate, eta, el);
    if (len < 0) return;
    size_t l = (size_t)len < sizeof line ? (size_t)len : sizeof line - 1;
    if (p->tty) {
        fprintf(stderr, "\r%s%*s", line, p->width > l ? (int)(p->width - l) : 0, "");
        p->width = l;
        p->lines = 1;
    } else {
        fprintf(stderr, "%s\n", line);
        p->lines++;
    }
    fflush(stderr);
}

void vt_progress_update(vt_progress *p, const char *label, uint64_t done, const char *extra)
{
    if (!p->enabled) return;
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    snprintf(p->extra, sizeof p->extra, "%s", extra ? extra : "");
    p->done = done;
    double t = vt_now();
    if (t - p->last < p->every && !(p->tty && done == p->total)) return;
    p->last = t;
    progress_write(p, t);
}

void vt_progress_end(vt_progress *p)
{
    if (!p->enabled || !p->lines) return;
    if (p->tty) {
        fputc('\n', stderr);
        p->lines = 0;
        return;
    }
    progress_write(p, vt_now()); /* the state at the end, after the periodic lines */
    p->lines = 0;
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
