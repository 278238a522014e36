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

static void name_op(vt_model *m, const char *fmt, unsigned a)
{
    if (m->n_ops + 1 < VT_MAX_OPS) snprintf(m->op_names[++m->n_ops], sizeof m->op_names[0], fmt, a);
}

/* The fixed operation sequence of a step; ids are 1, 2, ... in execution order. */
static void build_op_table(vt_model *m)
{
    m->n_ops = 0;
    snprintf(m->op_names[0], sizeof m->op_names[0], "?");
    for (uint32_t l = 1; l <= m->L; l++) {
        name_op(m, "layer %u forward GEMM", l);
        name_op(m, "layer %u bias add", l);
    }
    name_op(m, "softmax%.0u", 0);
    name_op(m, "cross-entropy loss%.0u", 0);
    name_op(m, "logits gradient%.0u", 0);
    for (uint32_t l = m->L; l >= 1; l--) {
        name_op(m, "layer %u weight-gradient GEMM", l);
        name_op(m, "layer %u bias gradient", l);
        if (l > 1) name_op(m, "layer %u input-gradient GEMM", l);
    }
    for (uint32_t l = 1; l <= m->L; l++)
        for (int t = 0; t < 2; t++) {
            char what[24];
            snprintf(what, sizeof what, "%c%u", t ? 'b' : 'W', l);
            if (m->rc.optimizer == VT_OPT_SGD) {
                snprintf(m->op_names[++m->n_ops], sizeof m->op_names[0], "SGD velocity %s", what);
                snprintf(m->op_names[++m->n_ops], sizeof m->op_names[0], "SGD update %s", what);
            } else {
                snprintf(m->op_names[++m->n_ops], sizeof m->op_names[0], "Adam moment 1 %s", what);
                snprintf(m->op_names[++m->n_ops], sizeof m->op_names[0], "Adam moment 2 %s", what);
                snprintf(m->op_names[++m->n_ops], sizeof m->op_names[0], "Adam update %s", what);
            }
        }
}

const char *vt_model_op_name(const vt_model *m, uint32_t op_id)
{
    return op_id >= 1 && op_id <= m->n_ops ? m->op_names[op_id] : "?";
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
    size_t B = rc->batch, bd = B * maxd, big = bd > maxw ? bd : maxw;
    int bad = 0;
    m->state = xcalloc(m->n_state, sizeof(float), &bad);
    m->grads = xcalloc(m->n_params, sizeof(float), &bad);
    for (uint32_t l = 0; l <= m->L; l++) {
        m->act[l] = xcalloc(B * rc->widths[l], sizeof(float), &bad);
        m->z[l] = xcalloc(B * rc->widths[l], sizeof(float), &bad);
    }
    m->tmp = xcalloc(bd, sizeof(float), &bad);
    m->probs = xcalloc(bd, sizeof(float), &bad);
    m->dz[0] = xcalloc(bd, sizeof(float), &bad);
    m->dz[1] = xcalloc(bd, sizeof(float), &bad);
    m->da = xcalloc(bd, sizeof(float), &bad);
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
    for (uint32_t l = 0; l <= VT_MAX_LAYERS; l++) free(m->act[l]), free(m->z[l]);
    free(m->tmp);
    free(m->probs);
    free(m->dz[0]);
    free(m->dz[1]);
    free(m->da);
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

#define ROUND(xs, bnd, rows, cols, out) VT_FORWARD_IF_ERROR(vt_round(rc, ++op, (xs), (bnd), (rows), (cols), (out)))

static vt_err optimizer_update(vt_model *m, vt_rctx *rc, uint32_t *opp, uint64_t s)
{
    uint32_t op = *opp;
    const vt_recipe *r = &m->rc;
    double lr = vt_recipe_lr(r, s);
    for (uint32_t l = 0; l < m->L; l++)
        for (int t = 0; t < 2; t++) {
            size_t off = t ? m->off_b[l] : m->off_w[l];
            size_t n = t ? r->widths[l + 1] : (size_t)r->widths[l] * r->widths[l + 1];
            float *w = m->state + off, *g = m->grads + off, *m1 = m->state + m->n_params + off;
            if (r->optimizer == VT_OPT_SGD) {
                vt_sgd_velocity(n, w, g, m1, r->momentum, r->weight_decay, m->x64);
                ROUND(m->x64, NULL, 1, n, m1);
                vt_sgd_apply(n, w, m1, lr, m->x64);
                ROUND(m->x64, NULL, 1, n, w);
            } else {
                float *m2 = m->state + 2 * m->n_params + off;
                vt_adam_moments(n, g, m1, m2, r->beta1, r->beta2, m->x64, m->x64b);
                ROUND(m->x64, NULL, 1, n, m1);
                ROUND(m->x64b, NULL, 1, n, m2);
                vt_adam_apply(n, w, m1, m2, lr, r->beta1, r->beta2, r->eps, s, m->x64);
                ROUND(m->x64, NULL, 1, n, w);
            }
        }
    *opp = op;
    return VT_OK;
}

vt_err vt_model_step(vt_model *m, const vt_dataset *ds, vt_rctx *rc, float *loss)
{
    const vt_recipe *r = &m->rc;
    const uint32_t L = m->L;
    const size_t B = r->batch;
    uint64_t s = m->step + 1;
    uint32_t op = 0;
    vt_bounds bd;
    VT_RETURN_ERROR_IF(ds->d != r->widths[0] || ds->n_classes != r->widths[L] || ds->n != m->n_examples,
                       VT_ERR_ARG, "dataset shape (%zu x %u, %u classes) does not fit the model", ds->n, ds->d,
                       ds->n_classes);
    VT_RETURN_ERROR_IF(rc->step != s, VT_ERR_ARG, "rounding context is at step %llu, model at %llu",
                       (unsigned long long)rc->step, (unsigned long long)s);
    batch_indices(m, s);
    VT_FORWARD_IF_ERROR(vt_data_batch(ds, m->batch_idx, B, m->act[0], m->labels));

    /* forward */
    for (uint32_t l = 1; l <= L; l++) {
        size_t din = r->widths[l - 1], dout = r->widths[l];
        const float *W = m->state + m->off_w[l - 1], *bias = m->state + m->off_b[l - 1];
        VT_FORWARD_IF_ERROR(vt_gemm(&m->exec, 0, 0, B, dout, din, m->act[l - 1], W, m->x64, m->rn, m->cn, &bd));
        ROUND(m->x64, &bd, B, dout, m->tmp);
        vt_bias_add(B, dout, m->tmp, bias, m->x64);
        ROUND(m->x64, NULL, B, dout, m->z[l]);
        if (l < L) /* ReLU: exact, nothing to round */
            for (size_t i = 0; i < B * dout; i++) m->act[l][i] = m->z[l][i] > 0.0f ? m->z[l][i] : 0.0f;
    }
    const size_t C = r->widths[L];
    VT_FORWARD_IF_ERROR(vt_softmax(&m->exec, B, C, m->z[L], m->x64, m->b64, &bd));
    ROUND(m->x64, &bd, B, C, m->probs);
    double lx, lb;
    VT_FORWARD_IF_ERROR(vt_xent_loss(&m->exec, B, C, m->probs, m->labels, &lx, &lb, &bd));
    ROUND(&lx, &bd, 1, 1, loss);
    vt_xent_backward(B, C, m->probs, m->labels, m->x64);
    int cur = 0;
    ROUND(m->x64, NULL, B, C, m->dz[cur]);

    /* backward */
    for (uint32_t l = L; l >= 1; l--) {
        size_t din = r->widths[l - 1], dout = r->widths[l];
        float *gW = m->grads + m->off_w[l - 1], *gb = m->grads + m->off_b[l - 1];
        const float *W = m->state + m->off_w[l - 1];
        VT_FORWARD_IF_ERROR(vt_gemm(&m->exec, 1, 0, din, dout, B, m->act[l - 1], m->dz[cur], m->x64, m->rn, m->cn, &bd));
        ROUND(m->x64, &bd, din, dout, gW);
        VT_FORWARD_IF_ERROR(vt_colsum(&m->exec, B, dout, m->dz[cur], m->x64, m->b64, &bd));
        ROUND(m->x64, &bd, 1, dout, gb);
        if (l > 1) {
            VT_FORWARD_IF_ERROR(vt_gemm(&m->exec, 0, 1, B, din, dout, m->dz[cur], W, m->x64, m->rn, m->cn, &bd));
            ROUND(m->x64, &bd, B, din, m->da);
            /* ReLU backward: exact */
            const float *zp = m->z[l - 1];
            float *dn = m->dz[cur ^ 1];
            for (size_t i = 0; i < B * din; i++) dn[i] = zp[i] > 0.0f ? m->da[i] : 0.0f;
            cur ^= 1;
        }
    }
    VT_FORWARD_IF_ERROR(optimizer_update(m, rc, &op, s));
    VT_RETURN_ERROR_IF(op != m->n_ops, VT_ERR_INTERNAL, "step ran %u operations, table has %u", op, m->n_ops);
    m->step = s;
    return VT_OK;
}

vt_err vt_model_state_hash(const vt_model *m, uint8_t out[VT_HASH_LEN])
{
    uint8_t hdr[24];
    memcpy(hdr, "VTST", 4);
    vt_put_u32le(hdr + 4, 1);
    vt_put_u64le(hdr + 8, m->step);
    vt_put_u64le(hdr + 16, m->n_state);
    vt_sha256_ctx c;
    VT_FORWARD_IF_ERROR(vt_sha256_init(&c));
    vt_err e = vt_sha256_update(&c, hdr, sizeof hdr);
    /* FP32 values are stored little-endian in memory on every supported host (checked at build). */
    if (!e) e = vt_sha256_update(&c, m->state, m->n_state * sizeof(float));
    if (e) {
        vt_sha256_abort(&c);
        return e;
    }
    return vt_sha256_final(&c, out);
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
