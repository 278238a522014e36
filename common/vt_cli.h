/* vt_cli.h - shared pieces of the command-line programs below every library: exit codes, progress
 * lines, and the parsers of command-line numbers (used by the option parser, cli/vt_cli_opts.h, and by
 * tests and benchmarks). argv itself is parsed in cli/ only. */
#ifndef VT_CLI_H
#define VT_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "vt_error.h"

/* Exit statuses of every program: one per kind of error (the table in README.md "Exit statuses"). */
enum {
    VT_EXIT_OK = 0,          /* success / audit verified */
    VT_EXIT_REJECTED = 1,    /* audit rejected (evidence against the run), or training diverged */
    VT_EXIT_CANNOT = 2,      /* cannot check: unreadable, corrupt or hostile input (run directory,
                              * manifest, checkpoint, data file, transcript), an input over a limit or
                              * the memory budget, I/O or database error, out of memory, the
                              * floating-point environment refused (VT_ERR_ENV, vt_env.h) */
    VT_EXIT_USAGE = 64,      /* the user's own mistake: command line, recipe (--set or --recipe
                              * file: unknown key, bad value, too large for --max-memory), an
                              * unknown dataset (EX_USAGE) */
    VT_EXIT_INTERNAL = 70,   /* an internal failure: an invariant of our own code (EX_SOFTWARE) */
};

/* The exit status for a library's error where the arguments are the user's: VT_OK 0,
 * VT_ERR_DIVERGED 1 (training diverged), VT_ERR_ARG 64 (usage), VT_ERR_INTERNAL 70, anything
 * else 2. */
int vt_cli_exit_for(vt_err e);
/* The same for an error while reading someone else's input (a run directory, a manifest), where
 * a library's VT_ERR_ARG is a property of that input: 2 instead of 64. */
int vt_cli_exit_for_input(vt_err e);

double vt_now(void); /* monotonic seconds */
/* *ts = the realtime clock ms milliseconds from now (a deadline for pthread_cond_timedwait). */
struct timespec;
void vt_abstime_after(struct timespec *ts, int64_t ms);

/* Command-line numbers. Each parses the whole of TEXT (the value of option OPT, e.g. "--step")
 * as a decimal number in [lo, hi] and stores it in *out; on anything else - empty, a sign where
 * none is allowed, trailing characters, hex, out of range, not finite - it leaves *out unchanged
 * and returns VT_ERR_ARG with a message naming the option ("--step: \"12x\" is not an integer in
 * 1..18446744073709551615"). main() turns that into the usage exit status. */
vt_err vt_cli_u64(const char *opt, const char *text, uint64_t lo, uint64_t hi, uint64_t *out);
vt_err vt_cli_int(const char *opt, const char *text, int lo, int hi, int *out);
vt_err vt_cli_u32(const char *opt, const char *text, uint32_t lo, uint32_t hi, uint32_t *out);
/* A size in bytes: digits, optionally followed by K, M, G or T (binary: 1K = 1024; "KiB" and "KB"
 * read the same), at least 1 byte; e.g. --max-memory 8G. */
vt_err vt_cli_size(const char *opt, const char *text, uint64_t *out);
/* "STEP:OP" with STEP in [1, UINT64_MAX] and OP in [1, UINT32_MAX]. */
vt_err vt_cli_step_op(const char *opt, const char *text, uint64_t *step, uint32_t *op);

/* Progress on stderr (not with --quiet): "LABEL done/total (P%)  EXTRA  R steps/s  ETA T".
 * A terminal gets one line, rewritten in place ("\r") at most 10 times a second; anything else (a
 * pipe, a file, a CI log) gets a whole line every VT_PROGRESS_INTERVAL seconds (default 10; 0: none)
 * and one at the end when at least one was written, never one per step. R is the mean rate since
 * the start, T the steps left at that rate (e.g. "1h02m", "3m05s", "42s"). */
#define VT_PROGRESS_INTERVAL_DEFAULT 10.0
typedef struct {
    int enabled;   /* anything is written */
    int tty;       /* 1: one updating line; 0: a line every `every` seconds */
    double t0, last, every;
    uint64_t total, start, done;
    int lines;     /* lines written (pipe) / 1 while an updating line is on the terminal */
    size_t width;  /* the updating line's length, to blank what a shorter one leaves */
    char label[24], extra[64];
} vt_progress;

/* The pipe interval from VT_PROGRESS_INTERVAL (seconds, a decimal number in [0, 86400]; anything else:
 * the default). */
double vt_progress_interval(void);
void vt_progress_init(vt_progress *p, uint64_t start, uint64_t total, int quiet);
/* extra: a short text such as "loss 0.2345" (may be NULL). */
void vt_progress_update(vt_progress *p, const char *label, uint64_t done, const char *extra);
/* Ends the line (terminal), or writes the last state (pipe, when a line was written before). */
void vt_progress_end(vt_progress *p);
/* "1h02m", "3m05s", "42s" (at most 99999h): the duration s in out[cap]. */
void vt_format_duration(double s, char *out, size_t cap);

/* One stderr line per rejection a server makes: "WHO: rejected PEER: REASON". Thread-safe.
 * At most 20 lines a second are written one by one; beyond that the rest of that second is
 * counted and reported in one summary line ("WHO: ... N more rejections in the last second"),
 * so a flood cannot turn the log into the bottleneck. */
void vt_log_rejection(const char *who, const char *peer, const char *reason);

#endif
