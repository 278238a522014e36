/* arbiter.h - the arbiter's subcommand files (arbiter/main.c dispatches):
 *   cmd_serve.c  serve (referee challenges)
 *   cmd_check.c  check (re-derive a recorded verdict offline) */
#ifndef VT_ARBITER_PROG_H
#define VT_ARBITER_PROG_H

#include "../cli/vt_cli_opts.h"

/* the arbiter's default evaluation order, serve's and check's */
#define ARBITER_ORDER VT_ORDER_REVERSE

int arbiter_serve(int argc, char **argv);
int arbiter_check(int argc, char **argv);

#endif
