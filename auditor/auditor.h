/* auditor.h - what the auditor's subcommand files share (auditor/main.c dispatches):
 *   cmd_verify.c     verify (replay a committed run)
 *   cmd_challenge.c  challenge (the auditor's side of the dispute game)
 *   cmd_certify.c    certify, check-certificate (robustness certificates)
 *   test_hooks.c     the test build's options (auditor-test, VT_TEST_HOOKS) */
#ifndef VT_AUDITOR_H
#define VT_AUDITOR_H

#include "../cli/vt_cli_opts.h"
#include "../game/vt_challenge.h"

int auditor_verify(int argc, char **argv);
int auditor_challenge(int argc, char **argv);
int auditor_certify(int argc, char **argv);
int auditor_check_certificate(int argc, char **argv);

#ifdef VT_TEST_HOOKS
const vt_cli_opt *auditor_test_challenge_opts(vt_challenge_opts *o);
#else
static inline const vt_cli_opt *auditor_test_challenge_opts(vt_challenge_opts *o) { (void)o; return NULL; }
#endif

#endif
