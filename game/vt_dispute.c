#include "vt_dispute.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_debug.h"
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
    VT_ASSERT(n_ops >= 1); /* a program has operations (vt_model_init) */
    *step = lo + (p - 1) / n_ops + 1;
    *op = (uint32_t)((p - 1) % n_ops) + 1;
    return 1;
}

/* An auditor's mark on a value it disputes although its own computation may coincide with
 * the trainer's: a missing or implausible entry, or an unusable log (docs/dispute.md). */
void vt_dispute_mark(uint8_t h[32])
{
    uint8_t buf[11 + 32];
    memcpy(buf, "VT-DISPUTED", 11);
    memcpy(buf + 11, h, 32);
    if (vt_sha256(buf, sizeof buf, h)) memset(h, 0, 32);
}

typedef struct {
    vt_seg_chain *c;
    uint64_t p, p0;
    vt_party party;
    int unusable;       /* the step's log could not be used: the first rounded operation is disputed */
    int marked, marked0; /* a disputed output was marked in this segment (before this step) */
} chain_hook_ctx;

static vt_err chain_hook(void *ctx, vt_model *m, uint64_t step, uint32_t op)
{
    (void)step;
    chain_hook_ctx *h = ctx;
    const vt_rctx *rctx = m->rctx;
    h->p++;
    VT_ASSERT(h->p >= 1 && h->p <= h->c->P); /* positions 1..P: one per operation of the segment */
    VT_FORWARD_IF_ERROR(vt_model_output_hash(m, op, h->c->h[h->p]));
    if (h->party == VT_PARTY_AUDITOR && !h->marked &&
        ((h->unusable && vt_model_op_rounded(m, op)) ||
         (!h->unusable && rctx && rctx->fault.code != VT_OK && rctx->fault.op_id == op))) {
        vt_dispute_mark(h->c->h[h->p]);
        h->marked = 1;
    }
    vt_chain_next(h->c->C[h->p - 1], h->c->h[h->p], h->c->C[h->p]);
    return VT_OK;
}

/* the step's log turned out unusable: start its positions again, every rounded output disputed */
static void chain_redo(void *ctx)
{
    chain_hook_ctx *h = ctx;
    h->p = h->p0, h->marked = h->marked0, h->unusable = 1;
}

vt_err vt_step_once(vt_model *m, vt_store *st, const vt_dataset *ds, vt_party party, int *disputed)
{
    vt_step_args a;
    memset(&a, 0, sizeof a);
    a.party = party, a.st = st, a.disputed = disputed;
    return vt_step_run(m, ds, &a);
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
    chain_hook_ctx hc = {out, 0, 0, party, 0, 0, 0};
    vt_step_args a;
    memset(&a, 0, sizeof a);
    a.party = party, a.st = st, a.hook = chain_hook, a.hook_ctx = &hc, a.redo = chain_redo;
    while (!e && m->step < hi) {
        hc.p0 = hc.p, hc.marked0 = hc.marked, hc.unusable = 0;
        e = vt_step_run(m, ds, &a);
    }
    VT_ASSERT(e || hc.p == out->P); /* every operation of every step hashed once */
    if (!e) e = vt_model_state_hash(m, out->h[out->P + 1]);
    if (!e && hc.marked) vt_dispute_mark(out->h[out->P + 1]);
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
    if (upto == 0) return VT_OK;
    vt_step_args a;
    memset(&a, 0, sizeof a);
    a.party = party, a.st = st, a.upto = upto, a.fault = fault;
    return vt_step_run(m, ds, &a);
}

vt_err vt_input_producer(const vt_model *m, uint64_t p, uint32_t tensor, uint64_t *pos)
{
    uint32_t n = m->n_ops, j = (uint32_t)((p - 1) % n) + 1;
    int prev;
    uint32_t q = vt_program_producer(&m->prog, j, tensor, &prev);
    VT_ASSERT(q <= n && (prev || q < j)); /* a producer in this step comes before its reader */
    *pos = 0;
    if (q && !prev) *pos = p - (j - q);
    else if (q && p - j >= n) *pos = p - j - n + q; /* the previous step, inside the segment */
    VT_ASSERT(*pos < p);
    VT_RETURN_ERROR_IF(*pos == 0 && tensor >= m->n_tensors, VT_ERR_MISMATCH,
                       "tensor %u read by operation %u has no producer in the segment", tensor, j);
    return VT_OK;
}

vt_err vt_model_wire_tensors(vt_model *m, const uint32_t *ids, uint32_t n, vt_msg_tensor *t, uint32_t cap,
                             uint32_t *nt)
{
    for (uint32_t k = 0; k < n; k++) {
        int dup = 0;
        for (uint32_t i = 0; i < *nt; i++) dup |= t[i].tensor_id == ids[k];
        if (dup) continue;
        size_t w = vt_model_tensor_words(m, ids[k]);
        VT_RETURN_ERROR_IF(*nt >= cap || w == 0 || w > UINT32_MAX, VT_ERR_LIMIT, "cannot send tensor %u", ids[k]);
        float *d = malloc(w * sizeof(float));
        VT_RETURN_ERROR_IF(!d, VT_ERR_NOMEM, "out of memory");
        vt_model_tensor_save(m, ids[k], d);
        t[(*nt)++] = (vt_msg_tensor){ids[k], 1, (uint32_t)w, d};
    }
    return VT_OK;
}

void vt_wire_tensors_free(vt_msg_tensor *t, uint32_t nt)
{
    for (uint32_t i = 0; i < nt; i++) free(t[i].data);
}
