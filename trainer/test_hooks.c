/* test_hooks.c - the trainer's test build only (trainer-test, VT_TEST_HOOKS): the options that drive
 * the test-only adversaries (tests/tools/vt_cheats.h) and the crash points. The production trainer is built
 * without this file: its --help shows none of these options and each is a usage error. */
#ifdef VT_TEST_HOOKS
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../dist/vt_dist.h"
#include "../store/vt_store.h"
#include "../tests/tools/vt_cheats.h"
#include "trainer.h"

static vt_cheats g_cheats; /* the test build's adversaries (tests/tools/vt_cheats.h) */
static int g_cheats_ready;

static vt_cheats *cheats(void)
{
    if (!g_cheats_ready) vt_cheats_init(&g_cheats), g_cheats_ready = 1;
    return &g_cheats;
}

/* --kill-at / --pause-at POINT[:N]: at the N-th pass (default the first) of the run directory's
 * write point POINT (docs/format.md "Run directory") the process kills itself with SIGKILL (a
 * crash) or stops with SIGSTOP (for a test to act meanwhile, then SIGCONT); --fault-trace prints
 * "write point POINT N" on stderr at every pass. */
static struct {
    char name[64];
    uint64_t n;
    int sig, trace, n_seen;
    struct {
        char name[64];
        uint64_t count;
    } seen[64];
} g_fault;

static void fault_hook(const char *point)
{
    int i = 0;
    while (i < g_fault.n_seen && strcmp(g_fault.seen[i].name, point) != 0) i++;
    if (i == g_fault.n_seen && i < 64) snprintf(g_fault.seen[g_fault.n_seen++].name, 64, "%s", point);
    uint64_t count = i < 64 ? ++g_fault.seen[i].count : 0;
    if (g_fault.trace) fprintf(stderr, "write point %s %llu\n", point, (unsigned long long)count);
    if (g_fault.sig && strcmp(point, g_fault.name) == 0 && count == g_fault.n) {
        fflush(NULL);
        raise(g_fault.sig);
    }
}

static vt_err fault_parse(const char *arg, int sig)
{
    const char *colon = strchr(arg, ':');
    size_t len = colon ? (size_t)(colon - arg) : strlen(arg);
    g_fault.n = 1;
    if (len == 0 || len >= sizeof g_fault.name ||
        (colon && vt_cli_u64("--kill-at / --pause-at N", colon + 1, 1, UINT64_MAX, &g_fault.n) != VT_OK))
        return vt_set_error(VT_ERR_ARG, "expected POINT[:N]");
    memcpy(g_fault.name, arg, len);
    g_fault.name[len] = 0;
    g_fault.sig = sig;
    vt_store_set_fault_hook(fault_hook);
    return VT_OK;
}

static vt_err opt_kill_at(void *p, const char *v) { (void)p; return fault_parse(v, SIGKILL); }
static vt_err opt_pause_at(void *p, const char *v) { (void)p; return fault_parse(v, SIGSTOP); }
static vt_err opt_fault_trace(void *p, const char *v)
{
    (void)p, (void)v;
    g_fault.trace = 1;
    vt_store_set_fault_hook(fault_hook);
    return VT_OK;
}

/* --flip-state R:S / --kill-rank R:S (data-parallel runs, tests/e2e/dp.sh): after step S, rank R (0: the
 * one process) flips the lowest bit of its state's first value (a rank whose state no longer is the
 * others') or kills itself with SIGKILL (a rank lost mid-run). */
static struct {
    int kill;
    uint64_t rank, step;
    vt_hooks hooks;
} g_rankf;

static vt_err rank_fault_hook(void *ctx, vt_model *m, uint64_t step, uint32_t op_id)
{
    (void)ctx;
    int rank = m->shard ? vt_dist_rank(m->shard->comm) : 0;
    if (step != g_rankf.step || op_id != m->n_ops || (uint64_t)rank != g_rankf.rank) return VT_OK;
    if (g_rankf.kill) {
        fflush(NULL);
        raise(SIGKILL);
    }
    uint32_t b;
    memcpy(&b, &m->state[0], 4);
    b ^= 1u;
    memcpy(&m->state[0], &b, 4);
    return VT_OK;
}

static vt_err rank_fault_parse(const char *opt, const char *arg, int kill)
{
    const char *colon = strchr(arg, ':');
    char r[32];
    if (!colon || (size_t)(colon - arg) >= sizeof r) return vt_set_error(VT_ERR_ARG, "expected RANK:STEP");
    memcpy(r, arg, (size_t)(colon - arg));
    r[colon - arg] = 0;
    VT_FORWARD_IF_ERROR(vt_cli_u64(opt, r, 0, 1u << 20, &g_rankf.rank));
    VT_FORWARD_IF_ERROR(vt_cli_u64(opt, colon + 1, 1, UINT64_MAX, &g_rankf.step));
    g_rankf.kill = kill;
    g_rankf.hooks.after_op = rank_fault_hook;
    return VT_OK;
}

static vt_err opt_flip_state(void *p, const char *v) { (void)p; return rank_fault_parse("--flip-state", v, 0); }
static vt_err opt_kill_rank(void *p, const char *v) { (void)p; return rank_fault_parse("--kill-rank", v, 1); }

static vt_err opt_cheat_train(void *p, const char *v)
{
    vt_train_opts *o = p;
    VT_FORWARD_IF_ERROR(vt_cheats_parse(cheats(), v));
    o->hooks = &cheats()->hooks;
    return VT_OK;
}

const vt_cli_opt *trainer_test_train_opts(vt_train_opts *o)
{
    static vt_cli_opt t[8];
    const vt_cli_opt v[] = {
        VT_OPT_U("--stop-after", "S", "TEST BUILD: stop after step S without committing (as a crash would)", 1,
                 UINT64_MAX, &o->stop_after),
        VT_OPT_FN_("--kill-at", "P[:N]", "TEST BUILD: SIGKILL at the N-th pass of write point P (docs/format.md)",
                   opt_kill_at, NULL),
        VT_OPT_FN_("--pause-at", "P[:N]", "TEST BUILD: SIGSTOP there instead", opt_pause_at, NULL),
        VT_OPT_FLAGFN("--fault-trace", "TEST BUILD: print every write point passed", opt_fault_trace, NULL),
        VT_OPT_FN_("--cheat", "KIND:S[:V]", "TEST BUILD: a cheating trainer (tests/tools/vt_cheats.h)", opt_cheat_train, o),
        VT_OPT_FN_("--flip-state", "R:S", "TEST BUILD: rank R flips a bit of its state after step S", opt_flip_state,
                   NULL),
        VT_OPT_FN_("--kill-rank", "R:S", "TEST BUILD: rank R kills itself (SIGKILL) after step S", opt_kill_rank,
                   NULL),
        VT_OPT_END};
    memcpy(t, v, sizeof v);
    return t;
}

int trainer_test_train_done(vt_train_opts *o)
{
    if (!g_rankf.hooks.after_op) return -1;
    if (o->hooks) {
        fprintf(stderr, "trainer: --flip-state / --kill-rank cannot be combined with --cheat\n");
        return VT_EXIT_USAGE;
    }
    o->hooks = &g_rankf.hooks;
    return -1;
}

static vt_err opt_misbehave(void *p, const char *v)
{
    vt_serve_opts *o = p;
    VT_FORWARD_IF_ERROR(vt_cheats_misbehave(cheats(), v));
    o->serve_hooks = &cheats()->serve_hooks;
    return VT_OK;
}

static vt_err opt_cheat_serve(void *p, const char *v)
{
    vt_serve_opts *o = p;
    VT_FORWARD_IF_ERROR(vt_cheats_parse(cheats(), v));
    o->hooks = &cheats()->hooks;
    return VT_OK;
}

const vt_cli_opt *trainer_test_serve_opts(vt_serve_opts *o)
{
    static vt_cli_opt t[3];
    const vt_cli_opt v[] = {
        VT_OPT_FN_("--cheat", "KIND:S[:V]", "TEST BUILD: the cheat the run was trained with", opt_cheat_serve, o),
        VT_OPT_FN_("--misbehave", "HOW", "TEST BUILD: a misbehaving server (tests/tools/vt_cheats.h)", opt_misbehave, o),
        VT_OPT_END};
    memcpy(t, v, sizeof v);
    return t;
}
#else
typedef int vt_trainer_test_hooks_empty; /* ISO C: a translation unit is not empty */
#endif
