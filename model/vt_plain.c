/* vt_plain.c - the plain FP32 / FP64 training step (benchmark baseline; see vt_plain.h).
 *
 * The step is written once for a scalar type T and compiled twice: this file includes
 * itself with T = float (suffix _f32, cblas_sgemm, expf/logf/sqrtf) and T = double (suffix
 * _f64, cblas_dgemm, exp/log/sqrt). The outer part (everything outside VT_PLAIN_T) holds
 * the type-independent pieces and the public functions, which dispatch on p->fp64.
 */
#ifndef VT_PLAIN_T /* ================================================= outer part */

#include "vt_plain.h"

#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vt_philox.h"

/* Batch of step s (1-based), exactly as vt_model: epoch e = (s-1) / steps_per_epoch uses the
 * Fisher-Yates permutation keyed by (seed, SHUFFLE, e); the batch is its p-th slice. */
static void batch_indices(vt_plain *p, uint64_t s)
{
    uint64_t B = p->rc.batch, spe = p->n_examples / B;
    uint64_t e = (s - 1) / spe, q = (s - 1) % spe;
    if (p->perm_epoch != e + 1) {
        vt_shuffle(p->perm, (uint32_t)p->n_examples, p->rc.seed, VT_RNG_SHUFFLE, e);
        p->perm_epoch = e + 1;
    }
    for (uint64_t i = 0; i < B; i++) p->batch_idx[i] = p->perm[q * B + i];
}

/* Same He-uniform draw as vt_model's init_params, rounded to FP32 as there (so the plain
 * models start from exactly the verifiable model's initial parameters). */
static float init_weight(const vt_recipe *r, uint32_t l, size_t i, double a)
{
    double u = vt_rand_unit(r->seed, VT_RNG_INIT, 2 * l, i);
    return (float)((2.0 * u - 1.0) * a);
}

/* ----------------------------------------------------------- the two instances */
#define VT_PLAIN_T float
#define SFX(name) name##_f32
#define GEMM cblas_sgemm
#define EXP expf
#define LOG logf
#define SQRT sqrtf
#define TMIN FLT_TRUE_MIN
#include "vt_plain.c"
#undef VT_PLAIN_T
#undef SFX
#undef GEMM
#undef EXP
#undef LOG
#undef SQRT
#undef TMIN

#define VT_PLAIN_T double
#define SFX(name) name##_f64
#define GEMM cblas_dgemm
#define EXP exp
#define LOG log
#define SQRT sqrt
#define TMIN DBL_TRUE_MIN
#include "vt_plain.c"
#undef VT_PLAIN_T
#undef SFX
#undef GEMM
#undef EXP
#undef LOG
#undef SQRT
#undef TMIN

/* ------------------------------------------------------------------ public API */

static void *xcalloc(size_t n, size_t sz, int *bad)
{
    void *q = calloc(n ? n : 1, sz);
    if (!q) *bad = 1;
    return q;
}

vt_err vt_plain_init(vt_plain *p, const vt_recipe *rc, size_t n_examples, int fp64)
{
    memset(p, 0, sizeof *p);
    VT_FORWARD_IF_ERROR(vt_recipe_validate(rc));
    VT_RETURN_ERROR_IF(n_examples < rc->batch || n_examples > UINT32_MAX, VT_ERR_ARG,
                       "the dataset has %zu examples; the batch needs %u (and at most 2^32)", n_examples, rc->batch);
    for (uint32_t l = 0; l <= rc->n_layers; l++)
        VT_RETURN_ERROR_IF(rc->widths[l] > INT_MAX / 2 || rc->batch > INT_MAX / 2, VT_ERR_LIMIT,
                           "layer width %u or batch %u too large for BLAS", rc->widths[l], rc->batch);
    p->rc = *rc;
    p->fp64 = fp64 != 0;
    p->esz = p->fp64 ? sizeof(double) : sizeof(float);
    p->L = rc->n_layers;
    p->n_examples = n_examples;
    size_t off = 0, maxd = 0;
    for (uint32_t l = 0; l < p->L; l++) {
        p->off_w[l] = off;
        off += (size_t)rc->widths[l] * rc->widths[l + 1];
        p->off_b[l] = off;
        off += rc->widths[l + 1];
    }
    for (uint32_t l = 0; l <= p->L; l++)
        if (rc->widths[l] > maxd) maxd = rc->widths[l];
    p->n_params = off;
    p->n_state = off * (rc->optimizer == VT_OPT_ADAM ? 3 : 2);
    size_t B = rc->batch, bd = B * maxd, es = p->esz;
    int bad = 0;
    p->state = xcalloc(p->n_state, es, &bad);
    p->grads = xcalloc(p->n_params, es, &bad);
    for (uint32_t l = 0; l <= p->L; l++) {
        p->act[l] = xcalloc(B * rc->widths[l], es, &bad);
        p->z[l] = xcalloc(B * rc->widths[l], es, &bad);
    }
    p->probs = xcalloc(bd, es, &bad);
    p->dz[0] = xcalloc(bd, es, &bad);
    p->dz[1] = xcalloc(bd, es, &bad);
    p->da = xcalloc(bd, es, &bad);
    p->labels = xcalloc(B, 1, &bad);
    p->batch_idx = xcalloc(B, sizeof(size_t), &bad);
    p->perm = xcalloc(n_examples, sizeof(uint32_t), &bad);
    if (bad) {
        vt_plain_free(p);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory allocating the plain model (%zu parameters)", off);
    }
    if (p->fp64)
        init_params_f64(p);
    else
        init_params_f32(p);
    return VT_OK;
}

void vt_plain_free(vt_plain *p)
{
    free(p->state);
    free(p->grads);
    for (uint32_t l = 0; l <= VT_MAX_LAYERS; l++) free(p->act[l]), free(p->z[l]);
    free(p->probs);
    free(p->dz[0]);
    free(p->dz[1]);
    free(p->da);
    free(p->labels);
    free(p->batch_idx);
    free(p->perm);
    memset(p, 0, sizeof *p);
}

vt_err vt_plain_step(vt_plain *p, const vt_dataset *ds, double *loss)
{
    const vt_recipe *r = &p->rc;
    VT_RETURN_ERROR_IF(p->state == NULL, VT_ERR_ARG, "vt_plain_step: model not initialised");
    VT_RETURN_ERROR_IF(ds->d != r->widths[0] || ds->n_classes != r->widths[p->L] || ds->n != p->n_examples,
                       VT_ERR_ARG, "dataset shape (%zu x %u, %u classes) does not fit the model", ds->n, ds->d,
                       ds->n_classes);
    uint64_t s = p->step + 1;
    batch_indices(p, s);
    double l = p->fp64 ? step_f64(p, ds, s) : step_f32(p, ds, s);
    if (loss) *loss = l;
    VT_RETURN_ERROR_IF(!isfinite(l), VT_ERR_DIVERGED, "plain %s training diverged at step %llu (loss %g)",
                       p->fp64 ? "FP64" : "FP32", (unsigned long long)s, l);
    p->step = s;
    return VT_OK;
}

vt_err vt_plain_accuracy(const vt_plain *p, const vt_dataset *ds, size_t max_examples, double *acc)
{
    const vt_recipe *r = &p->rc;
    VT_RETURN_ERROR_IF(ds->d != r->widths[0] || ds->n_classes != r->widths[p->L], VT_ERR_ARG,
                       "dataset does not fit the model");
    size_t n = ds->n < max_examples || !max_examples ? ds->n : max_examples;
    VT_RETURN_ERROR_IF(n == 0, VT_ERR_ARG, "vt_plain_accuracy: empty dataset");
    size_t correct = 0;
    vt_err e = p->fp64 ? accuracy_f64(p, ds, n, &correct) : accuracy_f32(p, ds, n, &correct);
    VT_FORWARD_IF_ERROR(e);
    *acc = (double)correct / (double)n;
    return VT_OK;
}

#else /* =========================================== the step for one type T */

#define T VT_PLAIN_T

static void SFX(init_params)(vt_plain *p)
{
    const vt_recipe *r = &p->rc;
    T *st = p->state;
    for (uint32_t l = 0; l < p->L; l++) {
        uint32_t fin = r->widths[l], fout = r->widths[l + 1];
        double a = sqrt(6.0 / (double)fin);
        T *W = st + p->off_w[l];
        size_t n = (size_t)fin * fout;
        for (size_t i = 0; i < n; i++) W[i] = (T)init_weight(r, l, i, a);
        /* biases and moments: calloc'd zeros are +0 for float and double */
    }
}

/* x[j*d + k] = feature k of example idx[j], straight from the dataset's lookup table into
 * the working precision (the same FP32 values vt_data_batch produces). */
static void SFX(load_batch)(vt_plain *p, const vt_dataset *ds, size_t B, T *x)
{
    const size_t d = ds->d;
    for (size_t j = 0; j < B; j++) {
        const uint8_t *src = ds->x + p->batch_idx[j] * d;
        T *dst = x + j * d;
        for (size_t k = 0; k < d; k++) dst[k] = (T)ds->lut[src[k]];
        p->labels[j] = ds->y[p->batch_idx[j]];
    }
}

/* One step; returns the mean loss of the batch (before the update). */
static double SFX(step)(vt_plain *p, const vt_dataset *ds, uint64_t s)
{
    const vt_recipe *r = &p->rc;
    const uint32_t L = p->L;
    const int B = (int)r->batch;
    T *st = p->state, *g = p->grads;
    SFX(load_batch)(p, ds, (size_t)B, p->act[0]);

    /* forward: z = act W + b; act = relu(z) for hidden layers */
    for (uint32_t l = 1; l <= L; l++) {
        const int din = (int)r->widths[l - 1], dout = (int)r->widths[l];
        const T *W = st + p->off_w[l - 1], *bias = st + p->off_b[l - 1];
        T *z = p->z[l], *a = p->act[l];
        GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, dout, din, (T)1, p->act[l - 1], din, W, dout, (T)0, z,
             dout);
        for (int i = 0; i < B; i++)
            for (int j = 0; j < dout; j++) z[(size_t)i * dout + j] += bias[j];
        if (l < L)
            for (size_t i = 0; i < (size_t)B * dout; i++) a[i] = z[i] > 0 ? z[i] : (T)0;
    }

    /* softmax, cross-entropy, logits gradient dz = (p - onehot) / B */
    const int C = (int)r->widths[L];
    T *pr = p->probs, *dz = p->dz[0];
    const T *zL = p->z[L];
    T lsum = 0;
    for (int i = 0; i < B; i++) {
        const T *zi = zL + (size_t)i * C;
        T *pi = pr + (size_t)i * C, m = zi[0], den = 0;
        for (int c = 1; c < C; c++)
            if (zi[c] > m) m = zi[c];
        for (int c = 0; c < C; c++) den += pi[c] = EXP(zi[c] - m);
        for (int c = 0; c < C; c++) pi[c] = pi[c] / den;
        T q = pi[p->labels[i]];
        lsum += -LOG(q < TMIN ? TMIN : q) / (T)B;
        for (int c = 0; c < C; c++) dz[(size_t)i * C + c] = (pi[c] - (c == p->labels[i] ? (T)1 : (T)0)) / (T)B;
    }

    /* backward */
    int cur = 0;
    for (uint32_t l = L; l >= 1; l--) {
        const int din = (int)r->widths[l - 1], dout = (int)r->widths[l];
        T *gW = g + p->off_w[l - 1], *gb = g + p->off_b[l - 1];
        const T *W = st + p->off_w[l - 1], *d = p->dz[cur];
        GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, din, dout, B, (T)1, p->act[l - 1], din, d, dout, (T)0, gW,
             dout);
        for (int j = 0; j < dout; j++) gb[j] = 0;
        for (int i = 0; i < B; i++)
            for (int j = 0; j < dout; j++) gb[j] += d[(size_t)i * dout + j];
        if (l > 1) {
            T *da = p->da, *dn = p->dz[cur ^ 1];
            const T *zp = p->z[l - 1];
            GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, B, din, dout, (T)1, d, dout, W, dout, (T)0, da, din);
            for (size_t i = 0; i < (size_t)B * din; i++) dn[i] = zp[i] > 0 ? da[i] : (T)0;
            cur ^= 1;
        }
    }

    /* optimiser: the formulas of kernels/vt_kernels.h, in T */
    const T lr = (T)vt_recipe_lr(r, s);
    const size_t np = p->n_params;
    T *w = st, *m1 = st + np;
    if (r->optimizer == VT_OPT_SGD) {
        const T mu = (T)r->momentum, wd = (T)r->weight_decay;
        for (size_t i = 0; i < np; i++) {
            m1[i] = mu * m1[i] + (g[i] + wd * w[i]);
            w[i] = w[i] - lr * m1[i];
        }
    } else {
        T *m2 = st + 2 * np;
        const T b1 = (T)r->beta1, b2 = (T)r->beta2, c1 = (T)(1.0 - r->beta1), c2 = (T)(1.0 - r->beta2);
        const T bc1 = (T)(1.0 - pow(r->beta1, (double)s)), bc2 = (T)(1.0 - pow(r->beta2, (double)s));
        const T eps = (T)r->eps;
        for (size_t i = 0; i < np; i++) {
            m1[i] = b1 * m1[i] + c1 * g[i];
            m2[i] = b2 * m2[i] + (c2 * g[i]) * g[i];
            w[i] = w[i] - (lr * (m1[i] / bc1)) / (SQRT(m2[i] / bc2) + eps);
        }
    }
    return (double)lsum;
}

/* Forward over the first n examples in chunks of up to 256 rows; counts correct argmaxes. */
static vt_err SFX(accuracy)(const vt_plain *p, const vt_dataset *ds, size_t n, size_t *correct)
{
    const vt_recipe *r = &p->rc;
    const T *st = p->state;
    size_t maxd = 0;
    for (uint32_t l = 0; l <= p->L; l++)
        if (r->widths[l] > maxd) maxd = r->widths[l];
    enum { CHUNK = 256 };
    T *a = malloc(CHUNK * maxd * sizeof(T)), *b = malloc(CHUNK * maxd * sizeof(T));
    if (!a || !b) {
        free(a), free(b);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory");
    }
    const size_t d = ds->d, C = r->widths[p->L];
    size_t ok = 0;
    for (size_t i0 = 0; i0 < n; i0 += CHUNK) {
        const int m = (int)(n - i0 < CHUNK ? n - i0 : CHUNK);
        for (int j = 0; j < m; j++)
            for (size_t k = 0; k < d; k++) a[(size_t)j * d + k] = (T)ds->lut[ds->x[(i0 + (size_t)j) * d + k]];
        for (uint32_t l = 0; l < p->L; l++) {
            const int din = (int)r->widths[l], dout = (int)r->widths[l + 1];
            const T *W = st + p->off_w[l], *bias = st + p->off_b[l];
            GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, dout, din, (T)1, a, din, W, dout, (T)0, b, dout);
            for (size_t i = 0; i < (size_t)m * dout; i++) {
                T v = b[i] + bias[i % (size_t)dout];
                b[i] = (l + 1 < p->L && !(v > 0)) ? (T)0 : v;
            }
            T *t = a;
            a = b, b = t;
        }
        for (int j = 0; j < m; j++) {
            const T *row = a + (size_t)j * C;
            size_t best = 0;
            for (size_t c = 1; c < C; c++)
                if (row[c] > row[best]) best = c;
            ok += best == ds->y[i0 + (size_t)j];
        }
    }
    free(a), free(b);
    *correct = ok;
    return VT_OK;
}

#undef T

#endif
