/* test_hooks.c - the auditor's test build only (auditor-test, VT_TEST_HOOKS): a lying or a slow
 * auditor in the dispute game (tests/tools/vt_cheats.h). The production auditor is built without it. */
#ifdef VT_TEST_HOOKS
#include <string.h>

#include "../tests/tools/vt_cheats.h"
#include "auditor.h"

static vt_cheats g_cheats; /* the test build's adversaries (tests/tools/vt_cheats.h) */

static vt_err opt_lie(void *p, const char *v)
{
    vt_challenge_opts *o = p;
    vt_cheats_init(&g_cheats);
    VT_FORWARD_IF_ERROR(vt_cheats_lie(&g_cheats, v));
    o->hooks = &g_cheats.hooks;
    o->until = g_cheats.step;
    return VT_OK;
}

const vt_cli_opt *auditor_test_challenge_opts(vt_challenge_opts *o)
{
    static vt_cli_opt t[3];
    const vt_cli_opt v[] = {
        VT_OPT_FN_("--lie", "STEP:OP[...]", "TEST BUILD: a lying auditor (tests/tools/vt_cheats.h)", opt_lie, o),
        VT_OPT_I("--slow", "MS", "TEST BUILD: each answer MS late", 0, 600000, &o->answer_delay_ms), VT_OPT_END};
    memcpy(t, v, sizeof v);
    return t;
}
#else
typedef int vt_auditor_test_hooks_empty; /* ISO C: a translation unit is not empty */
#endif
