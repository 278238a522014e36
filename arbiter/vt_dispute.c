#include "vt_dispute.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_hash.h"

void vt_chain_start(uint64_t lo, const uint8_t state_hash_lo[32], uint8_t c0[32])
{
    uint8_t buf[4 + 8 + 32];
    memcpy(buf, "VTC0", 4);
    vt_put_u64le(buf + 4, lo);
    memcpy(buf + 12, state_hash_lo, 32);
    if (vt_sha256(buf, sizeof buf, c0)) memset(c0, 0, 32);
}

void vt_chain_next(const uint8_t c[32], const uint8_t h[32], uint8_t out[32])
{
    uint8_t buf[64];
    memcpy(buf, c, 32);
    memcpy(buf + 32, h, 32);
    if (vt_sha256(buf, sizeof buf, out)) memset(out, 0, 32);
}

int vt_seg_position(uint64_t lo, uint32_t n_ops, uint64_t p, uint64_t *step, uint32_t *op)
{
    *step = lo + (p - 1) / n_ops + 1;
    *op = (uint32_t)((p - 1) % n_ops) + 1;
    return 1;
}

/* One step as the party (auditor: lenient replay of the step's stored log). */
static vt_err run_step(vt_model *m, vt_store *st, const vt_dataset *ds, vt_party party, uint32_t upto,
                       vt_op_hook hook, void *hctx, vt_fault *fault)
{
    uint64_t s = m->step + 1;
    vt_steplog log;
    vt_steplog_init(&log, s);
    vt_err e = VT_OK;
    vt_rmode mode = party == VT_PARTY_TRAINER ? VT_RMODE_RECORD : VT_RMODE_REPLAY;
    if (mode == VT_RMODE_REPLAY) {
        uint8_t *blob = NULL;
        size_t n = 0;
        e = vt_store_get_log(st, s, &blob, &n);
        if (!e) e = vt_steplog_decode(blob, n, NULL, &log, NULL);
        free(blob);
    }
    vt_rctx rc;
    vt_rctx_init(&rc, mode, m->rc.bound);
    rc.lenient = party == VT_PARTY_AUDITOR;
    if (!e) e = vt_rctx_begin_step(&rc, s, &log);
    if (!e) e = vt_model_run(m, ds, &rc, upto, hook, hctx);
    if (!e && upto == m->n_ops && !rc.lenient) e = vt_rctx_end_step(&rc);
    if (fault) *fault = rc.fault;
    vt_steplog_free(&log);
    return e;
}

vt_err vt_restore(vt_model *m, vt_store *st, const vt_dataset *ds, vt_party party, uint64_t target)
{
    uint64_t *cks = NULL;
    size_t n = 0;
    VT_FORWARD_IF_ERROR(vt_store_list_checkpoints(st, &cks, &n));
    uint64_t best = 0;
    int found = 0;
    for (size_t i = 0; i < n; i++)
        if (cks[i] <= target && cks[i] >= best) best = cks[i], found = 1;
    free(cks);
    VT_RETURN_ERROR_IF(m->step > target, VT_ERR_ARG, "the model is past step %llu", (unsigned long long)target);
    if (found && best > m->step) {
        float *state = NULL;
        VT_FORWARD_IF_ERROR(vt_store_get_checkpoint(st, best, m->n_state, &state));
        vt_err e = vt_model_set_state(m, best, state, m->n_state);
        free(state);
        VT_FORWARD_IF_ERROR(e);
    }
    while (m->step < target) VT_FORWARD_IF_ERROR(run_step(m, st, ds, party, m->n_ops, NULL, NULL, NULL));
    return VT_OK;
}

typedef struct {
    vt_seg_chain *c;
    uint64_t p;
} chain_hook_ctx;

static vt_err chain_hook(void *ctx, vt_model *m, uint64_t step, uint32_t op)
{
    (void)step, (void)op;
    chain_hook_ctx *h = ctx;
    h->p++;
    VT_FORWARD_IF_ERROR(vt_model_output_hash(m, op, h->c->h[h->p]));
    vt_chain_next(h->c->C[h->p - 1], h->c->h[h->p], h->c->C[h->p]);
    return VT_OK;
}

vt_err vt_seg_chain_compute(vt_model *m, vt_store *st, const vt_dataset *ds, vt_party party, uint64_t hi,
                            vt_seg_chain *out)
{
    memset(out, 0, sizeof *out);
    VT_RETURN_ERROR_IF(hi <= m->step, VT_ERR_ARG, "segment (%llu, %llu] is empty", (unsigned long long)m->step,
                       (unsigned long long)hi);
    out->lo = m->step;
    out->hi = hi;
    out->n_ops = m->n_ops;
    out->P = (hi - out->lo) * m->n_ops;
    VT_RETURN_ERROR_IF(out->P > (1u << 26), VT_ERR_LIMIT, "segment too long (%llu positions)",
                       (unsigned long long)out->P);
    out->h = calloc(out->P + 2, 32);
    out->C = calloc(out->P + 2, 32);
    if (!out->h || !out->C) {
        vt_seg_chain_free(out);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory for a chain of %llu positions", (unsigned long long)out->P);
    }
    uint8_t sh[32];
    vt_err e = vt_model_state_hash(m, sh);
    if (!e) vt_chain_start(out->lo, sh, out->C[0]);
    chain_hook_ctx hc = {out, 0};
    while (!e && m->step < hi) e = run_step(m, st, ds, party, m->n_ops, chain_hook, &hc, NULL);
    if (!e) e = vt_model_state_hash(m, out->h[out->P + 1]);
    if (!e) vt_chain_next(out->C[out->P], out->h[out->P + 1], out->C[out->P + 1]);
    if (e) vt_seg_chain_free(out);
    return e;
}

void vt_seg_chain_free(vt_seg_chain *c)
{
    free(c->h);
    free(c->C);
    c->h = c->C = NULL;
}

vt_err vt_run_to_op(vt_model *m, vt_store *st, const vt_dataset *ds, vt_party party, uint32_t op, int through_op,
                    vt_fault *fault)
{
    VT_RETURN_ERROR_IF(op < 1 || op > m->n_ops, VT_ERR_ARG, "no operation %u", op);
    uint32_t upto = through_op ? op : op - 1;
    if (fault) memset(fault, 0, sizeof *fault);
    return upto == 0 ? VT_OK : run_step(m, st, ds, party, upto, NULL, NULL, fault);
}

vt_err vt_input_producer(const vt_model *m, uint64_t p, uint32_t slot, uint64_t *pos, uint32_t *tensor)
{
    uint32_t want = slot;
    if ((slot >> 8) == VT_SLOT_Y) want = VT_SLOT(VT_SLOT_X, 0); /* labels come with the batch */
    for (uint64_t q = p - 1; q >= 1; q--) {
        uint32_t op = (uint32_t)((q - 1) % m->n_ops) + 1;
        if (m->ops[op].out == want) {
            *pos = q;
            return VT_OK;
        }
    }
    *pos = 0;
    for (uint32_t t = 0; t < m->n_tensors; t++)
        if (vt_model_tensor_slot(m, t) == slot) {
            *tensor = t;
            return VT_OK;
        }
    VT_RETURN_ERROR(VT_ERR_MISMATCH, "input slot 0x%x has no producer in the segment", slot);
}
