#include "vt_cli.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

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
