/* trainer.h - what the trainer's subcommand files share (trainer/main.c dispatches):
 *   cmd_train.c   train, recipe, plain (the recipe's options)
 *   cmd_export.c  export, report
 *   cmd_eval.c    eval, sample (a run's final model)
 *   cmd_serve.c   serve (the trainer's side of the dispute game)
 *   test_hooks.c  the test build's options (trainer-test, VT_TEST_HOOKS) */
#ifndef VT_TRAINER_H
#define VT_TRAINER_H

#include "../cli/vt_cli_opts.h"
#include "../game/vt_serve.h"
#include "../model/vt_model.h"
#include "../run/vt_train.h"

int trainer_train(int argc, char **argv);
int trainer_recipe(int argc, char **argv);
int trainer_plain(int argc, char **argv);
int trainer_export(int argc, char **argv);
int trainer_report(int argc, char **argv);
int trainer_eval(int argc, char **argv);
int trainer_sample(int argc, char **argv);
int trainer_serve(int argc, char **argv);

/* The model of a run's last checkpoint (the final parameters): *m initialised on success. */
vt_err trainer_load_run_model(const char *run, vt_recipe *rcp, vt_model *m, uint64_t *step);

/* The test build's options (test_hooks.c); the production build has none. */
#ifdef VT_TEST_HOOKS
const vt_cli_opt *trainer_test_train_opts(vt_train_opts *o);
int trainer_test_train_done(vt_train_opts *o); /* -1, or the exit status of a refused combination */
const vt_cli_opt *trainer_test_serve_opts(vt_serve_opts *o);
#else
static inline const vt_cli_opt *trainer_test_train_opts(vt_train_opts *o) { (void)o; return NULL; }
static inline int trainer_test_train_done(vt_train_opts *o) { (void)o; return -1; }
static inline const vt_cli_opt *trainer_test_serve_opts(vt_serve_opts *o) { (void)o; return NULL; }
#endif

#endif
