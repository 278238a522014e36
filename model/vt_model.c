#include "vt_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "vt_philox.h"

static void *xcalloc(size_t n, size_t sz, int *bad)
{
    void *p = calloc(n ? n : 1, sz);
    if (!p) *bad = 1;
    return p;
}

static vt_op *add_op(vt_model *m, uint8_t kind, uint8_t layer, uint8_t tensor, int rounded, uint32_t out)
{
    vt_op *o = &m->ops[++m->n_ops];
    memset(o, 0, sizeof *o);
    o->kind = kind, o->layer = layer, o->tensor = tensor, o->rounded = (uint8_t)rounded, o->out = out;
    return o;
}

static void op_in(vt_op *o, uint32_t slot) { o->in[o->n_in++] = slot; }

static uint32_t act_slot(uint32_t l) { return l == 0 ? VT_SLOT(VT_SLOT_X, 0) : VT_SLOT(VT_SLOT_A, l); }

/* The fixed operation sequence of a step; ids are 1, 2, ... in execution order. */
static void build_op_table(vt_model *m)
{
    const uint32_t L = m->L;
    vt_op *o;
    m->n_ops = 0;
    o = add_op(m, VT_OPK_LOAD_BATCH, 0, 0, 0, VT_SLOT(VT_SLOT_X, 0));
    snprintf(o->name, sizeof o->name, "load batch");
    for (uint32_t l = 1; l <= L; l++) {
        uint8_t tw = (uint8_t)(2 * (l - 1)), tb = (uint8_t)(tw + 1);
        o = add_op(m, VT_OPK_FWD_GEMM, (uint8_t)l, tw, 1, VT_SLOT(VT_SLOT_ZG, l));
        op_in(o, act_slot(l - 1)), op_in(o, VT_SLOT(VT_SLOT_W, tw));
        snprintf(o->name, sizeof o->name, "layer %u forward GEMM", l);
        o = add_op(m, VT_OPK_BIAS, (uint8_t)l, tb, 1, VT_SLOT(VT_SLOT_Z, l));
        op_in(o, VT_SLOT(VT_SLOT_ZG, l)), op_in(o, VT_SLOT(VT_SLOT_W, tb));
        snprintf(o->name, sizeof o->name, "layer %u bias add", l);
        if (l < L) {
            o = add_op(m, VT_OPK_RELU, (uint8_t)l, 0, 0, VT_SLOT(VT_SLOT_A, l));
            op_in(o, VT_SLOT(VT_SLOT_Z, l));
            snprintf(o->name, sizeof o->name, "layer %u ReLU", l);
        }
    }
    o = add_op(m, VT_OPK_SOFTMAX, (uint8_t)L, 0, 1, VT_SLOT(VT_SLOT_P, 0));
    op_in(o, VT_SLOT(VT_SLOT_Z, L));
    snprintf(o->name, sizeof o->name, "softmax");
    o = add_op(m, VT_OPK_LOSS, (uint8_t)L, 0, 1, VT_SLOT(VT_SLOT_LOSS, 0));
    op_in(o, VT_SLOT(VT_SLOT_P, 0)), op_in(o, VT_SLOT(VT_SLOT_Y, 0));
    snprintf(o->name, sizeof o->name, "cross-entropy loss");
    o = add_op(m, VT_OPK_DLOGITS, (uint8_t)L, 0, 1, VT_SLOT(VT_SLOT_DZ, L));
    op_in(o, VT_SLOT(VT_SLOT_P, 0)), op_in(o, VT_SLOT(VT_SLOT_Y, 0));
    snprintf(o->name, sizeof o->name, "logits gradient");
    for (uint32_t l = L; l >= 1; l--) {
        uint8_t tw = (uint8_t)(2 * (l - 1)), tb = (uint8_t)(tw + 1);
        o = add_op(m, VT_OPK_DW, (uint8_t)l, tw, 1, VT_SLOT(VT_SLOT_G, tw));
        op_in(o, act_slot(l - 1)), op_in(o, VT_SLOT(VT_SLOT_DZ, l));
        snprintf(o->name, sizeof o->name, "layer %u weight-gradient GEMM", l);
        o = add_op(m, VT_OPK_DB, (uint8_t)l, tb, 1, VT_SLOT(VT_SLOT_G, tb));
        op_in(o, VT_SLOT(VT_SLOT_DZ, l));
        snprintf(o->name, sizeof o->name, "layer %u bias gradient", l);
        if (l > 1) {
            o = add_op(m, VT_OPK_DX, (uint8_t)l, tw, 1, VT_SLOT(VT_SLOT_DA, l - 1));
            op_in(o, VT_SLOT(VT_SLOT_DZ, l)), op_in(o, VT_SLOT(VT_SLOT_W, tw));
            snprintf(o->name, sizeof o->name, "layer %u input-gradient GEMM", l);
            o = add_op(m, VT_OPK_RELU_BWD, (uint8_t)(l - 1), 0, 0, VT_SLOT(VT_SLOT_DZ, l - 1));
            op_in(o, VT_SLOT(VT_SLOT_Z, l - 1)), op_in(o, VT_SLOT(VT_SLOT_DA, l - 1));
            snprintf(o->name, sizeof o->name, "layer %u ReLU backward", l - 1);
        }
    }
    for (uint32_t t = 0; t < 2 * L; t++) {
        char what[16];
        snprintf(what, sizeof what, "%c%u", t % 2 ? 'b' : 'W', t / 2 + 1);
        uint8_t tt = (uint8_t)t;
        if (m->rc.optimizer == VT_OPT_SGD) {
            o = add_op(m, VT_OPK_SGD_V, 0, tt, 1, VT_SLOT(VT_SLOT_M1, t));
            op_in(o, VT_SLOT(VT_SLOT_W, t)), op_in(o, VT_SLOT(VT_SLOT_G, t)), op_in(o, VT_SLOT(VT_SLOT_M1, t));
            snprintf(o->name, sizeof o->name, "SGD velocity %s", what);
            o = add_op(m, VT_OPK_SGD_W, 0, tt, 1, VT_SLOT(VT_SLOT_W, t));
            op_in(o, VT_SLOT(VT_SLOT_W, t)), op_in(o, VT_SLOT(VT_SLOT_M1, t));
            snprintf(o->name, sizeof o->name, "SGD update %s", what);
        } else {
            o = add_op(m, VT_OPK_ADAM_M, 0, tt, 1, VT_SLOT(VT_SLOT_M1, t));
            op_in(o, VT_SLOT(VT_SLOT_G, t)), op_in(o, VT_SLOT(VT_SLOT_M1, t));
            snprintf(o->name, sizeof o->name, "Adam moment 1 %s", what);
            o = add_op(m, VT_OPK_ADAM_V, 0, tt, 1, VT_SLOT(VT_SLOT_M2, t));
            op_in(o, VT_SLOT(VT_SLOT_G, t)), op_in(o, VT_SLOT(VT_SLOT_M2, t));
            snprintf(o->name, sizeof o->name, "Adam moment 2 %s", what);
            o = add_op(m, VT_OPK_ADAM_W, 0, tt, 1, VT_SLOT(VT_SLOT_W, t));
            op_in(o, VT_SLOT(VT_SLOT_W, t)), op_in(o, VT_SLOT(VT_SLOT_M1, t)), op_in(o, VT_SLOT(VT_SLOT_M2, t));
            snprintf(o->name, sizeof o->name, "Adam update %s", what);
        }
    }
}

const char *vt_model_op_name(const vt_model *m, uint32_t op_id)
{
    return op_id >= 1 && op_id <= m->n_ops ? m->ops[op_id].name : "?";
}

static void init_params(vt_model *m)
{
    const vt_recipe *r = &m->rc;
    float *p = m->state;
    for (uint32_t l = 0; l < m->L; l++) {
        uint32_t fin = r->widths[l], fout = r->widths[l + 1];
        /* He-uniform: W ~ U(-a, a), a = sqrt(6 / fan_in): basic operations only */
        double a = sqrt(6.0 / (double)fin);
        float *W = p + m->off_w[l];
        size_t n = (size_t)fin * fout;
        for (size_t i = 0; i < n; i++) {
            double u = vt_rand_unit(r->seed, VT_RNG_INIT, 2 * l, i); /* exact 24-bit value in [0,1) */
            W[i] = (float)((2.0 * u - 1.0) * a);
        }
        memset(p + m->off_b[l], 0, fout * sizeof(float));
    }
    memset(m->state + m->n_params, 0, (m->n_state - m->n_params) * sizeof(float));
}

vt_err vt_model_init(vt_model *m, const vt_recipe *rc, size_t n_examples, vt_order order)
{
    memset(m, 0, sizeof *m);
    VT_FORWARD_IF_ERROR(vt_recipe_validate(rc));
    VT_RETURN_ERROR_IF(n_examples < rc->batch || n_examples > UINT32_MAX, VT_ERR_ARG,
                       "the dataset has %zu examples; the batch needs %u (and at most 2^32)", n_examples, rc->batch);
    m->rc = *rc;
    m->L = rc->n_layers;
    m->n_examples = n_examples;
    size_t off = 0, maxw = 0, maxd = 0;
    for (uint32_t l = 0; l < m->L; l++) {
        size_t w = (size_t)rc->widths[l] * rc->widths[l + 1];
        m->off_w[l] = off;
        off += w;
        m->off_b[l] = off;
        off += rc->widths[l + 1];
        if (w > maxw) maxw = w;
    }
    for (uint32_t l = 0; l <= m->L; l++)
        if (rc->widths[l] > maxd) maxd = rc->widths[l];
    m->n_params = off;
    m->n_state = off * (rc->optimizer == VT_OPT_ADAM ? 3 : 2);
    m->n_tensors = 2 * m->L * (rc->optimizer == VT_OPT_ADAM ? 3 : 2);
    size_t B = rc->batch, bd = B * maxd, big = bd > maxw ? bd : maxw;
    int bad = 0;
    m->state = xcalloc(m->n_state, sizeof(float), &bad);
    m->grads = xcalloc(m->n_params, sizeof(float), &bad);
    for (uint32_t l = 0; l <= m->L; l++) {
        m->act[l] = xcalloc(B * rc->widths[l], sizeof(float), &bad);
        m->z[l] = xcalloc(B * rc->widths[l], sizeof(float), &bad);
        m->zg[l] = xcalloc(B * rc->widths[l], sizeof(float), &bad);
        m->dz[l] = xcalloc(B * rc->widths[l], sizeof(float), &bad);
        m->da[l] = xcalloc(B * rc->widths[l], sizeof(float), &bad);
    }
    m->probs = xcalloc(bd, sizeof(float), &bad);
    m->labels = xcalloc(B, 1, &bad);
    m->batch_idx = xcalloc(B, sizeof(size_t), &bad);
    m->x64 = xcalloc(big, sizeof(double), &bad);
    m->x64b = xcalloc(big, sizeof(double), &bad);
    m->b64 = xcalloc(big, sizeof(double), &bad);
    m->rn = xcalloc(maxd > B ? maxd : B, sizeof(double), &bad);
    m->cn = xcalloc(maxd > B ? maxd : B, sizeof(double), &bad);
    m->perm = xcalloc(n_examples, sizeof(uint32_t), &bad);
    if (bad) {
        vt_model_free(m);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory allocating the model (%zu parameters)", off);
    }
    vt_exec_init(&m->exec, order, rc->bound, rc->seed);
    build_op_table(m);
    init_params(m);
    return VT_OK;
}

void vt_model_free(vt_model *m)
{
    free(m->state);
    free(m->grads);
    for (uint32_t l = 0; l <= VT_MAX_LAYERS; l++) free(m->act[l]), free(m->z[l]), free(m->zg[l]), free(m->dz[l]), free(m->da[l]);
    free(m->probs);
    free(m->labels);
    free(m->batch_idx);
    free(m->x64);
    free(m->x64b);
    free(m->b64);
    free(m->rn);
    free(m->cn);
    free(m->perm);
    vt_exec_free(&m->exec);
    memset(m, 0, sizeof *m);
}

/* Batch of step s (1-based): epoch e = (s-1) / steps_per_epoch uses a Fisher-Yates
 * permutation keyed by (seed, SHUFFLE, e); the batch is its p-th slice of B examples. */
static void batch_indices(vt_model *m, uint64_t s)
{
    uint64_t B = m->rc.batch, spe = m->n_examples / B;
    uint64_t e = (s - 1) / spe, p = (s - 1) % spe;
    if (m->perm_epoch != e + 1) {
        vt_shuffle(m->perm, (uint32_t)m->n_examples, m->rc.seed, VT_RNG_SHUFFLE, e);
        m->perm_epoch = e + 1;
    }
    for (uint64_t i = 0; i < B; i++) m->batch_idx[i] = m->perm[p * B + i];
}

/* ------------------------------------------------------------- slots */

static float *slot_ptr(const vt_model *m, uint32_t slot, size_t *n, uint8_t **labels)
{
    const vt_recipe *r = &m->rc;
    uint32_t kind = slot >> 8, idx = slot & 0xff;
    size_t B = r->batch;
    if (labels) *labels = NULL;
    if ((kind == VT_SLOT_ZG || kind == VT_SLOT_Z || kind == VT_SLOT_A || kind == VT_SLOT_DZ || kind == VT_SLOT_DA) &&
        (idx < 1 || idx > m->L))
        return NULL;
    if ((kind == VT_SLOT_G || kind == VT_SLOT_W || kind == VT_SLOT_M1 || kind == VT_SLOT_M2) && idx >= 2 * m->L)
        return NULL;
    size_t toff = 0, tn = 0;
    if (kind >= VT_SLOT_G) {
        uint32_t l = idx / 2;
        toff = idx % 2 ? m->off_b[l] : m->off_w[l];
        tn = idx % 2 ? r->widths[l + 1] : (size_t)r->widths[l] * r->widths[l + 1];
    }
    switch (kind) {
    case VT_SLOT_X: *n = B * r->widths[0]; return m->act[0];
    case VT_SLOT_Y: *n = B; if (labels) *labels = m->labels; return NULL;
    case VT_SLOT_ZG: *n = B * r->widths[idx]; return m->zg[idx];
    case VT_SLOT_Z: *n = B * r->widths[idx]; return m->z[idx];
    case VT_SLOT_A: *n = B * r->widths[idx]; return m->act[idx];
    case VT_SLOT_DZ: *n = B * r->widths[idx]; return m->dz[idx];
    case VT_SLOT_DA: *n = B * r->widths[idx]; return m->da[idx];
    case VT_SLOT_P: *n = B * r->widths[m->L]; return m->probs;
    case VT_SLOT_LOSS: *n = 1; return (float *)&m->loss;
    case VT_SLOT_G: *n = tn; return m->grads + toff;
    case VT_SLOT_W: *n = tn; return m->state + toff;
    case VT_SLOT_M1: *n = tn; return m->state + m->n_params + toff;
    case VT_SLOT_M2:
        if (r->optimizer != VT_OPT_ADAM) return NULL;
        *n = tn;
        return m->state + 2 * m->n_params + toff;
    default: return NULL;
    }
}

float *vt_model_slot(vt_model *m, uint32_t slot, size_t *n, uint8_t **labels)
{
    *n = 0;
    return slot_ptr(m, slot, n, labels);
}

uint32_t vt_model_tensor_slot(const vt_model *m, uint32_t t)
{
    uint32_t np = 2 * m->L;
    return t < np ? VT_SLOT(VT_SLOT_W, t) : t < 2 * np ? VT_SLOT(VT_SLOT_M1, t - np) : VT_SLOT(VT_SLOT_M2, t - 2 * np);
}

static vt_err hash_floats(const float *p, size_t n, const uint8_t *extra, size_t extra_n, uint8_t out[VT_HASH_LEN])
{
    /* FP32 values are little-endian in memory on every supported host (x86-64, AArch64 LE). */
    vt_sha256_ctx c;
    VT_FORWARD_IF_ERROR(vt_sha256_init(&c));
    vt_err e = p ? vt_sha256_update(&c, p, n * sizeof(float)) : VT_OK;
    if (!e && extra) e = vt_sha256_update(&c, extra, extra_n);
    if (e) {
        vt_sha256_abort(&c);
        return e;
    }
    return vt_sha256_final(&c, out);
}

vt_err vt_model_output_hash(vt_model *m, uint32_t op_id, uint8_t out[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(op_id < 1 || op_id > m->n_ops, VT_ERR_ARG, "no operation %u", op_id);
    size_t n = 0;
    float *p = slot_ptr(m, m->ops[op_id].out, &n, NULL);
    if (m->ops[op_id].kind == VT_OPK_LOAD_BATCH) return hash_floats(p, n, m->labels, m->rc.batch, out);
    return hash_floats(p, n, NULL, 0, out);
}

vt_err vt_model_tensor_hashes(const vt_model *m, uint8_t (*out)[VT_HASH_LEN])
{
    for (uint32_t t = 0; t < m->n_tensors; t++) {
        size_t n = 0;
        const float *p = slot_ptr(m, vt_model_tensor_slot(m, t), &n, NULL);
        VT_FORWARD_IF_ERROR(hash_floats(p, n, NULL, 0, out[t]));
    }
    return VT_OK;
}

vt_err vt_state_hash_of(uint64_t step, uint32_t n, const uint8_t (*th)[VT_HASH_LEN], uint8_t out[VT_HASH_LEN])
{
    uint8_t hdr[20];
    memcpy(hdr, "VTST", 4);
    vt_put_u32le(hdr + 4, 2);
    vt_put_u64le(hdr + 8, step);
    vt_put_u32le(hdr + 16, n);
    vt_sha256_ctx c;
    VT_FORWARD_IF_ERROR(vt_sha256_init(&c));
    vt_err e = vt_sha256_update(&c, hdr, sizeof hdr);
    if (!e && n) e = vt_sha256_update(&c, th, (size_t)n * VT_HASH_LEN);
    if (e) {
        vt_sha256_abort(&c);
        return e;
    }
    return vt_sha256_final(&c, out);
}

vt_err vt_model_state_hash(const vt_model *m, uint8_t out[VT_HASH_LEN])
{
    uint8_t th[VT_MAX_TENSORS][VT_HASH_LEN];
    VT_FORWARD_IF_ERROR(vt_model_tensor_hashes(m, th));
    return vt_state_hash_of(m->step, m->n_tensors, (const uint8_t(*)[VT_HASH_LEN])th, out);
}

/* ------------------------------------------------------------ operations */

#define ROUND(xs, bnd, rows, cols, out) VT_FORWARD_IF_ERROR(vt_round(rc, op_id, (xs), (bnd), (rows), (cols), (out)))

static vt_err exec_op(vt_model *m, const vt_dataset *ds, vt_rctx *rc, uint64_t s, uint32_t op_id)
{
    const vt_recipe *r = &m->rc;
    const vt_op *o = &m->ops[op_id];
    const size_t B = r->batch;
    const uint32_t l = o->layer, t = o->tensor;
    vt_bounds bd;
    size_t n = 0, n1 = 0;
    switch (o->kind) {
    case VT_OPK_LOAD_BATCH:
        VT_RETURN_ERROR_IF(!ds, VT_ERR_ARG, "loading a batch needs the dataset");
        batch_indices(m, s);
        if (m->cheat.kind == VT_CHEAT_REORDER && m->cheat.step == s) /* another example than the recipe's */
            m->batch_idx[0] = (m->batch_idx[0] + 1) % m->n_examples;
        return vt_data_batch(ds, m->batch_idx, B, m->act[0], m->labels);
    case VT_OPK_FWD_GEMM: {
        size_t din = r->widths[l - 1], dout = r->widths[l];
        const float *W = m->state + m->off_w[l - 1];
        VT_FORWARD_IF_ERROR(vt_gemm(&m->exec, 0, 0, B, dout, din, m->act[l - 1], W, m->x64, m->rn, m->cn, &bd));
        ROUND(m->x64, &bd, B, dout, m->zg[l]);
        return VT_OK;
    }
    case VT_OPK_BIAS: {
        size_t dout = r->widths[l];
        vt_bias_add(B, dout, m->zg[l], m->state + m->off_b[l - 1], m->x64);
        ROUND(m->x64, NULL, B, dout, m->z[l]);
        return VT_OK;
    }
    case VT_OPK_RELU: /* exact, nothing to round */
        n = B * r->widths[l];
        for (size_t i = 0; i < n; i++) m->act[l][i] = m->z[l][i] > 0.0f ? m->z[l][i] : 0.0f;
        return VT_OK;
    case VT_OPK_SOFTMAX: {
        size_t C = r->widths[m->L];
        VT_FORWARD_IF_ERROR(vt_softmax(&m->exec, B, C, m->z[m->L], m->x64, m->b64, &bd));
        ROUND(m->x64, &bd, B, C, m->probs);
        return VT_OK;
    }
    case VT_OPK_LOSS: {
        double lx, lb;
        VT_FORWARD_IF_ERROR(vt_xent_loss(&m->exec, B, r->widths[m->L], m->probs, m->labels, &lx, &lb, &bd));
        ROUND(&lx, &bd, 1, 1, &m->loss);
        return VT_OK;
    }
    case VT_OPK_DLOGITS: {
        size_t C = r->widths[m->L];
        vt_xent_backward(B, C, m->probs, m->labels, m->x64);
        ROUND(m->x64, NULL, B, C, m->dz[m->L]);
        return VT_OK;
    }
    case VT_OPK_DW: {
        size_t din = r->widths[l - 1], dout = r->widths[l];
        float *gW = m->grads + m->off_w[l - 1];
        VT_FORWARD_IF_ERROR(vt_gemm(&m->exec, 1, 0, din, dout, B, m->act[l - 1], m->dz[l], m->x64, m->rn, m->cn, &bd));
        ROUND(m->x64, &bd, din, dout, gW);
        if (m->cheat.kind == VT_CHEAT_POISON && m->cheat.step == s && l == 1)
            for (size_t i = 0; i < din * dout; i++) gW[i] = (float)((double)gW[i] + m->cheat.value);
        return VT_OK;
    }
    case VT_OPK_DB: {
        size_t dout = r->widths[l];
        VT_FORWARD_IF_ERROR(vt_colsum(&m->exec, B, dout, m->dz[l], m->x64, m->b64, &bd));
        ROUND(m->x64, &bd, 1, dout, m->grads + m->off_b[l - 1]);
        return VT_OK;
    }
    case VT_OPK_DX: {
        size_t din = r->widths[l - 1], dout = r->widths[l];
        const float *W = m->state + m->off_w[l - 1];
        VT_FORWARD_IF_ERROR(vt_gemm(&m->exec, 0, 1, B, din, dout, m->dz[l], W, m->x64, m->rn, m->cn, &bd));
        ROUND(m->x64, &bd, B, din, m->da[l - 1]);
        return VT_OK;
    }
    case VT_OPK_RELU_BWD: /* exact */
        n = B * r->widths[l];
        for (size_t i = 0; i < n; i++) m->dz[l][i] = m->z[l][i] > 0.0f ? m->da[l][i] : 0.0f;
        return VT_OK;
    default: break;
    }
    /* optimiser operations on tensor t */
    float *w = slot_ptr(m, VT_SLOT(VT_SLOT_W, t), &n, NULL);
    float *g = slot_ptr(m, VT_SLOT(VT_SLOT_G, t), &n1, NULL);
    float *m1 = slot_ptr(m, VT_SLOT(VT_SLOT_M1, t), &n1, NULL);
    double lr = (m->cheat.kind == VT_CHEAT_LR && m->cheat.step == s) ? m->cheat.value : vt_recipe_lr(r, s);
    switch (o->kind) {
    case VT_OPK_SGD_V:
        vt_sgd_velocity(n, w, g, m1, r->momentum, r->weight_decay, m->x64);
        ROUND(m->x64, NULL, 1, n, m1);
        return VT_OK;
    case VT_OPK_SGD_W:
    case VT_OPK_ADAM_W:
        if (o->kind == VT_OPK_SGD_W)
            vt_sgd_apply(n, w, m1, lr, m->x64);
        else
            vt_adam_apply(n, w, m1, slot_ptr(m, VT_SLOT(VT_SLOT_M2, t), &n1, NULL), lr, r->beta1, r->beta2, r->eps, s,
                          m->x64);
        ROUND(m->x64, NULL, 1, n, w);
        if (m->cheat.kind == VT_CHEAT_FLIP_W && m->cheat.step == s && t == 0) w[0] = vt_bits_f32(vt_f32_bits(w[0]) ^ 1u);
        return VT_OK;
    case VT_OPK_ADAM_M: /* the kernel computes both moments; the second result is unused here */
        vt_adam_moments(n, g, m1, m1, r->beta1, r->beta2, m->x64, m->x64b);
        ROUND(m->x64, NULL, 1, n, m1);
        return VT_OK;
    case VT_OPK_ADAM_V: {
        float *m2 = slot_ptr(m, VT_SLOT(VT_SLOT_M2, t), &n1, NULL);
        vt_adam_moments(n, g, m2, m2, r->beta1, r->beta2, m->x64b, m->x64);
        ROUND(m->x64, NULL, 1, n, m2);
        return VT_OK;
    }
    default: break;
    }
    VT_RETURN_ERROR(VT_ERR_INTERNAL, "unknown operation kind %u", o->kind);
}

vt_err vt_model_exec_op(vt_model *m, const vt_dataset *ds, vt_rctx *rc, uint64_t step, uint32_t op_id)
{
    VT_RETURN_ERROR_IF(op_id < 1 || op_id > m->n_ops, VT_ERR_ARG, "no operation %u", op_id);
    return exec_op(m, ds, rc, step, op_id);
}

vt_err vt_model_run(vt_model *m, const vt_dataset *ds, vt_rctx *rc, uint32_t upto, vt_op_hook hook, void *hook_ctx)
{
    const vt_recipe *r = &m->rc;
    uint64_t s = m->step + 1;
    VT_RETURN_ERROR_IF(ds->d != r->widths[0] || ds->n_classes != r->widths[m->L] || ds->n != m->n_examples,
                       VT_ERR_ARG, "dataset shape (%zu x %u, %u classes) does not fit the model", ds->n, ds->d,
                       ds->n_classes);
    VT_RETURN_ERROR_IF(rc->step != s, VT_ERR_ARG, "rounding context is at step %llu, model at %llu",
                       (unsigned long long)rc->step, (unsigned long long)s);
    VT_RETURN_ERROR_IF(upto > m->n_ops, VT_ERR_ARG, "no operation %u", upto);
    for (uint32_t op = 1; op <= upto; op++) {
        VT_FORWARD_IF_ERROR(exec_op(m, ds, rc, s, op));
        if (m->cheat.kind == VT_CHEAT_FLIP_OUTPUT && m->cheat.step == s && (uint32_t)m->cheat.value == op) {
            size_t n = 0;
            float *p = slot_ptr(m, m->ops[op].out, &n, NULL);
            if (p && n) p[0] = vt_bits_f32(vt_f32_bits(p[0]) ^ 1u);
        }
        if (hook) VT_FORWARD_IF_ERROR(hook(hook_ctx, m, s, op));
    }
    if (upto == m->n_ops) m->step = s;
    return VT_OK;
}

vt_err vt_model_step(vt_model *m, const vt_dataset *ds, vt_rctx *rc, float *loss)
{
    VT_FORWARD_IF_ERROR(vt_model_run(m, ds, rc, m->n_ops, NULL, NULL));
    *loss = m->loss;
    return VT_OK;
}

vt_err vt_model_set_state(vt_model *m, uint64_t step, const float *state, size_t n)
{
    VT_RETURN_ERROR_IF(n != m->n_state, VT_ERR_MISMATCH, "state has %zu values, the model needs %zu", n, m->n_state);
    memcpy(m->state, state, n * sizeof(float));
    m->step = step;
    return VT_OK;
}

vt_err vt_model_accuracy(const vt_model *m, const vt_dataset *ds, size_t max_examples, double *acc)
{
    const vt_recipe *r = &m->rc;
    size_t n = ds->n < max_examples || !max_examples ? ds->n : max_examples, maxd = 0, correct = 0;
    VT_RETURN_ERROR_IF(ds->d != r->widths[0], VT_ERR_ARG, "dataset does not fit the model");
    for (uint32_t l = 0; l <= m->L; l++)
        if (r->widths[l] > maxd) maxd = r->widths[l];
    double *a = malloc(maxd * sizeof(double)), *b = malloc(maxd * sizeof(double));
    float *row = malloc(ds->d * sizeof(float));
    if (!a || !b || !row) {
        free(a), free(b), free(row);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        vt_err e = vt_data_row(ds, i, row);
        if (e) {
            free(a), free(b), free(row);
            return e;
        }
        for (uint32_t k = 0; k < ds->d; k++) a[k] = row[k];
        for (uint32_t l = 0; l < m->L; l++) {
            size_t din = r->widths[l], dout = r->widths[l + 1];
            const float *W = m->state + m->off_w[l], *bias = m->state + m->off_b[l];
            for (size_t j = 0; j < dout; j++) {
                double s = bias[j];
                for (size_t k = 0; k < din; k++) s += a[k] * W[k * dout + j];
                b[j] = (l + 1 < m->L && s < 0) ? 0 : s;
            }
            double *t = a;
            a = b, b = t;
        }
        size_t best = 0;
        for (size_t j = 1; j < r->widths[m->L]; j++)
            if (a[j] > a[best]) best = j;
        correct += best == ds->y[i];
    }
    *acc = (double)correct / (double)n;
    free(a), free(b), free(row);
    return VT_OK;
}
