/* vt_model_hash.c - the model's tensors as committed bytes (vt_model.h): tensor, output and state
 * hashes (docs/format.md), and the tensors' wire words (a tensor as 32-bit words: the game's
 * messages). */
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "vt_model.h"
#include "vt_model_int.h"

/* Tensor bytes are little-endian in memory on every supported host (x86-64, AArch64 LE). */
vt_err vt_model_tensor_hash(vt_model *m, uint32_t t, uint8_t out[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(t >= m->prog.n_tensors, VT_ERR_ARG, "no tensor %u", t);
    size_t bytes = 0;
    const void *p = vt_model_tensor(m, t, &bytes);
    return vt_sha256(p, bytes, out);
}

/* SHA-256 of a header and n hashes */
static vt_err hash_list(const uint8_t *hdr, size_t hlen, uint32_t n, const uint8_t (*th)[VT_HASH_LEN],
                        uint8_t out[VT_HASH_LEN])
{
    vt_sha256_ctx c;
    VT_FORWARD_IF_ERROR(vt_sha256_init(&c));
    vt_err e = vt_sha256_update(&c, hdr, hlen);
    if (!e && n) e = vt_sha256_update(&c, th, (size_t)n * VT_HASH_LEN);
    if (e) {
        vt_sha256_abort(&c);
        return e;
    }
    return vt_sha256_final(&c, out);
}

vt_err vt_output_hash_of(uint32_t n, const uint8_t (*th)[VT_HASH_LEN], uint8_t out[VT_HASH_LEN])
{
    if (n == 1) {
        memcpy(out, th[0], VT_HASH_LEN);
        return VT_OK;
    }
    uint8_t hdr[8];
    memcpy(hdr, "VTOH", 4);
    vt_put_u32le(hdr + 4, n);
    return hash_list(hdr, sizeof hdr, n, th, out);
}

vt_err vt_model_output_hash(vt_model *m, uint32_t op_id, uint8_t out[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(op_id < 1 || op_id > m->prog.n_ops, VT_ERR_ARG, "no operation %u", op_id);
    return vti_model_output_hash(m, op_id, out);
}

vt_err vti_model_output_hash(vt_model *m, uint32_t op_id, uint8_t out[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(op_id < 1 || op_id > m->prog.n_ops + m->prog.n_eval, VT_ERR_ARG, "no operation %u", op_id);
    const vt_opdesc *o = &m->prog.op[op_id];
    uint8_t th[VT_MAX_OP_OUTPUTS][VT_HASH_LEN];
    VT_RETURN_ERROR_IF(o->n_out < 1 || o->n_out > VT_MAX_OP_OUTPUTS, VT_ERR_INTERNAL, "operation %u has %u outputs", op_id, o->n_out);
    for (uint32_t k = 0; k < o->n_out; k++) VT_FORWARD_IF_ERROR(vt_model_tensor_hash(m, o->out[k], th[k]));
    return vt_output_hash_of(o->n_out, (const uint8_t(*)[VT_HASH_LEN])th, out);
}

size_t vt_model_tensor_words(const vt_model *m, uint32_t t)
{
    if (t >= m->prog.n_tensors) return 0;
    const vt_tensor *d = &m->prog.t[t];
    return d->dtype == VT_DT_F64 ? 2 * d->n : d->n;
}

static uint32_t word_at(const void *w, size_t i)
{
    uint32_t v;
    memcpy(&v, (const uint8_t *)w + 4 * i, 4);
    return v;
}

static void word_put(void *w, size_t i, uint32_t v) { memcpy((uint8_t *)w + 4 * i, &v, 4); }

void vt_model_tensor_save(vt_model *m, uint32_t t, void *words)
{
    const vt_tensor *d = &m->prog.t[t];
    const uint8_t *p = vt_model_tensor(m, t, NULL);
    if (d->dtype == VT_DT_U8)
        for (size_t i = 0; i < d->n; i++) word_put(words, i, p[i]);
    else /* F32, I32: one word an element; F64: two, low half first (little-endian memory) */
        memcpy(words, p, vt_model_tensor_words(m, t) * 4);
}

vt_err vt_model_tensor_load(vt_model *m, uint32_t t, const void *words, size_t n)
{
    VT_RETURN_ERROR_IF(t >= m->prog.n_tensors, VT_ERR_MISMATCH, "no tensor %u", t);
    const vt_tensor *d = &m->prog.t[t];
    VT_RETURN_ERROR_IF(n != vt_model_tensor_words(m, t), VT_ERR_MISMATCH, "tensor %s needs %zu words, got %zu",
                       d->name, vt_model_tensor_words(m, t), n);
    uint8_t *p = vt_model_tensor(m, t, NULL);
    if (d->dtype == VT_DT_U8) {
        for (size_t i = 0; i < d->n; i++)
            VT_RETURN_ERROR_IF(word_at(words, i) > 255, VT_ERR_MISMATCH, "tensor %s: element %zu is %u, not a U8",
                               d->name, i, word_at(words, i));
        for (size_t i = 0; i < d->n; i++) p[i] = (uint8_t)word_at(words, i);
    } else {
        memcpy(p, words, n * 4);
    }
    return VT_OK;
}

vt_err vt_model_tensor_hashes(vt_model *m, uint8_t (*out)[VT_HASH_LEN])
{
    for (uint32_t t = 0; t < m->n_tensors; t++) VT_FORWARD_IF_ERROR(vt_model_tensor_hash(m, t, out[t]));
    return VT_OK;
}

vt_err vt_state_hash_of(uint64_t step, uint32_t n, const uint8_t (*th)[VT_HASH_LEN], uint8_t out[VT_HASH_LEN])
{
    uint8_t hdr[20];
    memcpy(hdr, "VTST", 4);
    vt_put_u32le(hdr + 4, 2);
    vt_put_u64le(hdr + 8, step);
    vt_put_u32le(hdr + 16, n);
    return hash_list(hdr, sizeof hdr, n, th, out);
}

vt_err vt_model_state_hash(vt_model *m, uint8_t out[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(m->sst != NULL, VT_ERR_INTERNAL,
                       "the optimiser state is sharded: its state hash is streamed to rank 0 (vt_model_shard_state_hash)");
    uint8_t (*th)[VT_HASH_LEN] = malloc(((size_t)m->n_tensors + 1) * VT_HASH_LEN);
    VT_RETURN_ERROR_IF(!th, VT_ERR_NOMEM, "out of memory");
    vt_err e = vt_model_tensor_hashes(m, th);
    if (!e) e = vt_state_hash_of(m->step, m->n_tensors, (const uint8_t(*)[VT_HASH_LEN])th, out);
    free(th);
    return e;
}
