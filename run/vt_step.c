#include "vt_step.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vt_env.h"

static void add_stats(vt_rstats *acc, const vt_rstats *s)
{
    if (!acc) return;
    acc->rounded += s->rounded, acc->exact += s->exact, acc->kulisch += s->kulisch;
    acc->logged_dir += s->logged_dir, acc->logged_val += s->logged_val, acc->checked += s->checked;
}

static vt_err run_ops(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, uint64_t s, vt_steplog *log, uint32_t upto,
                      const vt_step_args *a)
{
    vt_err e = vt_rctx_begin_step(rctx, s, log);
    if (!e) e = vt_model_run(m, ds, rctx, upto, a->hook, a->hook_ctx);
    if (!e && upto == m->n_ops && vt_rctx_end_step(rctx)) e = VT_ERR_MISMATCH;
    return e;
}

vt_err vt_step_run(vt_model *m, const vt_dataset *ds, const vt_step_args *a)
{
    uint64_t s = m->step + 1;
    uint32_t upto = a->upto ? a->upto : m->n_ops;
    VT_RETURN_ERROR_IF(upto > m->n_ops, VT_ERR_ARG, "no operation %u", upto);
    /* the floating-point environment, before and after the step (a library opened or a thread
     * started since start-up may have set flush-to-zero): a few flops; VT_ERR_ENV is never a
     * verdict on the run */
    if (a->fault) memset(a->fault, 0, sizeof *a->fault);
    VT_FORWARD_IF_ERROR(vt_env_check());
    vt_steplog own;
    vt_steplog_init(&own, s);
    vt_steplog *log = a->log ? a->log : &own;
    vt_err e = VT_OK;
    vt_rmode mode = a->party == VT_PARTY_TRAINER ? VT_RMODE_RECORD : VT_RMODE_REPLAY;
    float *saved = NULL;
    if (mode == VT_RMODE_REPLAY && !a->log) {
        uint8_t *blob = NULL;
        size_t n = 0;
        VT_RETURN_ERROR_IF(!a->st, VT_ERR_ARG, "replaying a step needs its log or the run store");
        e = vt_store_get_log(a->st, s, &blob, &n);
        if (!e) e = vt_steplog_decode_stored(blob, n, s, NULL, &own, NULL);
        free(blob);
        if (e && a->party == VT_PARTY_VERIFIER) {
            vt_steplog_free(&own);
            return e;
        }
    }
    if (a->party == VT_PARTY_AUDITOR) { /* kept to redo the step with our own rounding */
        saved = malloc(m->n_state * sizeof(float));
        if (!saved) {
            vt_steplog_free(&own);
            VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory");
        }
        memcpy(saved, m->state, m->n_state * sizeof(float));
    }
    vt_rctx rctx;
    vt_rctx_init(&rctx, mode, m->rcp.bound);
    rctx.lenient = a->party == VT_PARTY_AUDITOR;
    if (!e) e = run_ops(m, ds, &rctx, s, log, upto, a);
    if (vt_env_check() != VT_OK) e = VT_ERR_ENV;
    int unusable = a->party == VT_PARTY_AUDITOR && e != VT_OK && e != VT_ERR_NOMEM && e != VT_ERR_DIVERGED &&
                   e != VT_ERR_ENV;
    if (unusable) { /* redo the step with our own rounding */
        memcpy(m->state, saved, m->n_state * sizeof(float));
        m->step = s - 1;
        if (a->redo) a->redo(a->hook_ctx);
        vt_steplog_reset(&own, s);
        vt_rctx_init(&rctx, VT_RMODE_RECORD, m->rcp.bound);
        e = run_ops(m, ds, &rctx, s, &own, upto, a);
        memset(&rctx.fault, 0, sizeof rctx.fault);
        rctx.fault.code = VT_ERR_MISMATCH;
        rctx.fault.step = s;
    }
    if (a->fault) *a->fault = rctx.fault;
    if (a->disputed) *a->disputed = unusable || rctx.fault.code != VT_OK;
    if (a->unusable) *a->unusable = unusable;
    add_stats(a->stats, &rctx.stats);
    if (!e && a->loss && upto == m->n_ops) *a->loss = vt_model_loss(m);
    free(saved);
    vt_steplog_free(&own);
    return e;
}

vt_err vt_restore(vt_model *m, vt_store *st, const vt_dataset *ds, vt_party party, uint64_t target)
{
    uint64_t *cks = NULL;
    size_t n = 0;
    VT_RETURN_ERROR_IF(m->step > target, VT_ERR_ARG, "the model is past step %llu", (unsigned long long)target);
    VT_FORWARD_IF_ERROR(vt_store_list_checkpoints(st, &cks, &n));
    uint64_t best = 0;
    int found = 0;
    for (size_t i = 0; i < n; i++)
        if (cks[i] <= target && cks[i] >= best) best = cks[i], found = 1;
    free(cks);
    /* a run started from a file (--init): step 0's state is its checkpoint, not the recipe's */
    if (found && (best > m->step || (best == m->step && m->step == 0 && m->rcp.has_init))) {
        float *state = NULL;
        VT_FORWARD_IF_ERROR(vt_store_get_checkpoint(st, best, m->n_state, &state));
        vt_err e = vt_model_set_state(m, best, state, m->n_state);
        free(state);
        VT_FORWARD_IF_ERROR(e);
    }
    vt_step_args a;
    memset(&a, 0, sizeof a);
    a.party = party;
    a.st = st;
    while (m->step < target) VT_FORWARD_IF_ERROR(vt_step_run(m, ds, &a));
    return VT_OK;
}
