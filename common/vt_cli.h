/* vt_cli.h - shared pieces of the command-line programs: exit codes and progress lines. */
#ifndef VT_CLI_H
#define VT_CLI_H

#include <stdint.h>

/* Exit statuses of every program (documented in README.md). */
enum {
    VT_EXIT_OK = 0,          /* success / audit verified */
    VT_EXIT_REJECTED = 1,    /* audit rejected, or training failed (diverged) */
    VT_EXIT_CANNOT = 2,      /* cannot check / unreadable or corrupt input / I/O error */
    VT_EXIT_USAGE = 64,      /* command-line usage error (EX_USAGE) */
};

double vt_now(void); /* monotonic seconds */

/* Progress on stderr when it is a terminal (and not disabled): "\r<label> done/total ...". */
typedef struct {
    int enabled;
    double t0, last;
    uint64_t total, start;
} vt_progress;

void vt_progress_init(vt_progress *p, uint64_t start, uint64_t total, int quiet);
/* extra: a short text such as "loss 0.2345" (may be NULL). */
void vt_progress_update(vt_progress *p, const char *label, uint64_t done, const char *extra);
void vt_progress_end(vt_progress *p);

#endif
