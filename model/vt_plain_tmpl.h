/* vt_plain_tmpl.h - the plain FP32/FP64 implementations of the operation kinds for one scalar
 * type (the benchmark baseline, vt_plain.h): a template, included only by vt_plain.c, once per
 * type, after it defines the parameters
 *     VT_PLAIN_T  the scalar type (float, double)
 *     SFX(name)   the instance's name of `name` (name##_f32, name##_f64)
 *     GEMM        the CBLAS GEMM of T; BE_GEMM the backend's plain GEMM of T
 *     EXP, LOG, SQRT, TANH   libm's functions of T; TMIN the smallest positive subnormal of T
 * It defines the kinds (static, suffixed, named by their stems in the list vt_kinds.h) and their
 * table SFX(PLAIN), generated from the list, and undefines the parameters and its own macros at
 * its end, so that the next instance starts clean. It has no include guard: each inclusion is one
 * instance. */
#ifndef VT_PLAIN_T
#error "vt_plain_tmpl.h is a template: vt_plain.c defines VT_PLAIN_T and the other parameters first"
#endif

#define T VT_PLAIN_T
#define X(k) ((T *)TP(c->p, c->o->in[k]))
#define Y(k) ((T *)TP(c->p, c->o->out[k]))
#define NOUT(k) (c->p->prog.t[c->o->out[k]].n)
#define SHAPE(k, d) (c->p->prog.t[c->o->in[k]].shape[d])

/* rows p->batch_idx of ds into tensor t, straight from the lookup table into T (the same FP32
 * values vt_data_batch produces) */
static void SFX(load_rows)(vt_plain *p, const vt_dataset *ds, uint32_t t)
{
    const size_t d = ds->d, B = p->prog.t[t].shape[0];
    T *x = TP(p, t);
    for (size_t j = 0; j < B; j++) {
        const uint8_t *src = ds->x + p->batch_idx[j] * d;
        for (size_t k = 0; k < d; k++) x[j * d + k] = (T)ds->lut[src[k]];
    }
}

static vt_err SFX(load_batch)(plain_ctx *c)
{
    batch_indices(c->p, c->step);
    SFX(load_rows)(c->p, c->ds, c->o->out[0]);
    uint8_t *y = TP(c->p, c->o->out[1]);
    for (int64_t j = 0; j < c->o->iarg[0]; j++) y[j] = c->ds->y[c->p->batch_idx[j]];
    return VT_OK;
}

static vt_err SFX(matmul)(plain_ctx *c)
{
    const int64_t *a = c->o->iarg;
    int ta = (int)a[0], tb = (int)a[1], M = (int)a[2], N = (int)a[3], K = (int)a[4];
    const vt_backend *be = c->p->be;
    if (be && be->BE_GEMM) return be->BE_GEMM(be->impl, ta, tb, (size_t)M, (size_t)N, (size_t)K, X(0), X(1), Y(0));
    GEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, (T)1, X(0),
         ta ? M : K, X(1), tb ? K : N, (T)0, Y(0), N);
    return VT_OK;
}

static vt_err SFX(bias_add)(plain_ctx *c)
{
    size_t M = SHAPE(0, 0), N = SHAPE(0, 1);
    const T *x = X(0), *b = X(1);
    T *y = Y(0);
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) y[i * N + j] = x[i * N + j] + b[j];
    return VT_OK;
}

static vt_err SFX(relu)(plain_ctx *c)
{
    const T *z = X(0);
    T *a = Y(0);
    for (size_t i = 0; i < NOUT(0); i++) a[i] = z[i] > 0 ? z[i] : (T)0;
    return VT_OK;
}

static vt_err SFX(relu_bwd)(plain_ctx *c)
{
    const T *z = X(0), *da = X(1);
    T *dz = Y(0);
    for (size_t i = 0; i < NOUT(0); i++) dz[i] = z[i] > 0 ? da[i] : (T)0;
    return VT_OK;
}

static vt_err SFX(softmax)(plain_ctx *c)
{
    size_t N = SHAPE(0, 0), C = SHAPE(0, 1);
    const T *z = X(0);
    T *pr = Y(0);
    for (size_t i = 0; i < N; i++) {
        const T *zi = z + i * C;
        T *pi = pr + i * C, m = zi[0], den = 0;
        for (size_t k = 1; k < C; k++)
            if (zi[k] > m) m = zi[k];
        for (size_t k = 0; k < C; k++) den += pi[k] = EXP(zi[k] - m);
        for (size_t k = 0; k < C; k++) pi[k] = pi[k] / den;
    }
    return VT_OK;
}

static vt_err SFX(labels_ok)(size_t N, size_t C, const uint8_t *y)
{
    for (size_t i = 0; i < N; i++) VT_RETURN_ERROR_IF(y[i] >= C, VT_ERR_ARG, "label %u of example %zu is not a class", y[i], i);
    return VT_OK;
}

static vt_err SFX(xent)(plain_ctx *c)
{
    size_t N = SHAPE(0, 0), C = SHAPE(0, 1);
    const T *pr = X(0);
    const uint8_t *y = TP(c->p, c->o->in[1]);
    VT_FORWARD_IF_ERROR(SFX(labels_ok)(N, C, y));
    T lsum = 0;
    for (size_t i = 0; i < N; i++) {
        T q = pr[i * C + y[i]];
        lsum += -LOG(q < TMIN ? TMIN : q) / (T)N;
    }
    *Y(0) = lsum;
    return VT_OK;
}

static vt_err SFX(xent_bwd)(plain_ctx *c)
{
    size_t N = SHAPE(0, 0), C = SHAPE(0, 1);
    const T *pr = X(0);
    const uint8_t *y = TP(c->p, c->o->in[1]);
    VT_FORWARD_IF_ERROR(SFX(labels_ok)(N, C, y));
    T *dz = Y(0);
    for (size_t i = 0; i < N; i++)
        for (size_t k = 0; k < C; k++) dz[i * C + k] = (pr[i * C + k] - (k == y[i] ? (T)1 : (T)0)) / (T)N;
    return VT_OK;
}

static vt_err SFX(colsum)(plain_ctx *c)
{
    size_t M = SHAPE(0, 0), N = SHAPE(0, 1);
    const T *x = X(0);
    T *s = Y(0);
    for (size_t j = 0; j < N; j++) s[j] = 0;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) s[j] += x[i * N + j];
    return VT_OK;
}

static vt_err SFX(sgd_velocity)(plain_ctx *c)
{
    const T *w = X(0), *g = X(1), mu = (T)c->o->farg[0], wd = (T)c->o->farg[1];
    T *v = Y(0);
    for (size_t i = 0; i < NOUT(0); i++) v[i] = mu * v[i] + (g[i] + wd * w[i]);
    return VT_OK;
}

static vt_err SFX(sgd_apply)(plain_ctx *c)
{
    const T *v = X(1), lr = (T)f64_of(c->p, c->o->in[2]);
    T *w = Y(0);
    for (size_t i = 0; i < NOUT(0); i++) w[i] = w[i] - lr * v[i];
    return VT_OK;
}

static vt_err SFX(adam_moments)(plain_ctx *c)
{
    const double b1 = c->o->farg[0], b2 = c->o->farg[1];
    const T *g = X(0), tb1 = (T)b1, tb2 = (T)b2, c1 = (T)(1.0 - b1), c2 = (T)(1.0 - b2);
    T *m1 = Y(0), *m2 = Y(1);
    for (size_t i = 0; i < NOUT(0); i++) {
        m1[i] = tb1 * m1[i] + c1 * g[i];
        m2[i] = tb2 * m2[i] + (c2 * g[i]) * g[i];
    }
    return VT_OK;
}

static vt_err SFX(adam_apply)(plain_ctx *c)
{
    const double b1 = c->o->farg[0], b2 = c->o->farg[1], s = f64_of(c->p, c->o->in[3]);
    const T *m1 = X(1), *m2 = X(2), lr = (T)f64_of(c->p, c->o->in[4]), eps = (T)c->o->farg[2];
    const T bc1 = (T)(1.0 - pow(b1, s)), bc2 = (T)(1.0 - pow(b2, s));
    T *w = Y(0);
    for (size_t i = 0; i < NOUT(0); i++) w[i] = w[i] - (lr * (m1[i] / bc1)) / (SQRT(m2[i] / bc2) + eps);
    return VT_OK;
}

static vt_err SFX(augment)(plain_ctx *c)
{
    const int64_t *a = c->o->iarg;
    const size_t C = (size_t)a[0], H = (size_t)a[1], W = (size_t)a[2], d = C * H * W, B = SHAPE(0, 0);
    const uint32_t pad = (uint32_t)a[3];
    const T *in = X(0);
    T *out = Y(0);
    for (size_t b = 0; b < B; b++) {
        uint32_t oy, ox;
        int fl;
        vt_augment_draw((uint64_t)a[5], c->step, b, pad, (int)a[4], &oy, &ox, &fl);
        for (size_t e = 0; e < d; e++) {
            int64_t src = vt_augment_source(H, W, pad, oy, ox, fl, e);
            out[b * d + e] = src < 0 ? (T)0 : in[b * d + (size_t)src];
        }
    }
    return VT_OK;
}

/* ---- convolutional networks (the same index logic as the verified kinds: kernels/vt_cnn.h) */

static vt_conv_geom SFX(geom)(plain_ctx *c, int chw)
{
    const int64_t *a = c->o->iarg;
    vt_conv_geom g;
    memset(&g, 0, sizeof g);
    if (vt_conv_geom_make(&g, a[0], a[1], a[2], a[3], a[4], a[5], a[6], chw)) memset(&g, 0, sizeof g);
    return g; /* the program was checked: the geometry is valid */
}

static vt_err SFX(im2col)(plain_ctx *c)
{
    vt_conv_geom g = SFX(geom)(c, (int)c->o->iarg[7]);
    SFX(vt_im2col)(&g, X(0), Y(0));
    return VT_OK;
}

static vt_err SFX(dgather)(plain_ctx *c)
{
    vt_conv_geom g = SFX(geom)(c, 0);
    SFX(vt_conv_dgather)(&g, g.C, X(0), Y(0));
    return VT_OK;
}

static vt_err SFX(wperm)(plain_ctx *c)
{
    const int64_t *a = c->o->iarg;
    SFX(vt_conv_wperm)((size_t)a[0], (size_t)a[1], (size_t)a[2], X(0), Y(0));
    return VT_OK;
}

static vt_err SFX(add)(plain_ctx *c)
{
    const T *a = X(0), *b = X(1);
    T *y = Y(0);
    for (size_t i = 0; i < NOUT(0); i++) y[i] = a[i] + b[i];
    return VT_OK;
}

static vt_err SFX(coldot)(plain_ctx *c)
{
    size_t M = SHAPE(0, 0), N = SHAPE(0, 1);
    const T *a = X(0), *b = X(1);
    T *s = Y(0);
    for (size_t j = 0; j < N; j++) s[j] = 0;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) s[j] += a[i * N + j] * b[i * N + j];
    return VT_OK;
}

static vt_err SFX(bn_center)(plain_ctx *c)
{
    size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
    const T *x = X(0), *s1 = X(1);
    T *y = Y(0);
    for (size_t i = 0; i < M; i++)
        for (size_t k = 0; k < C; k++) y[i * C + k] = x[i * C + k] - s1[k] / (T)M;
    return VT_OK;
}

static T SFX(rstd)(T s2, size_t M, double eps) { return (T)1 / SQRT(s2 / (T)M + (T)eps); }

static vt_err SFX(bn_apply)(plain_ctx *c)
{
    size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
    const T *xc = X(0), *s2 = X(1), *g = X(2), *b = X(3);
    T *y = Y(0);
    for (size_t i = 0; i < M; i++)
        for (size_t k = 0; k < C; k++) y[i * C + k] = g[k] * (xc[i * C + k] * SFX(rstd)(s2[k], M, c->o->farg[0])) + b[k];
    return VT_OK;
}

static vt_err SFX(bn_running)(plain_ctx *c)
{
    size_t C = NOUT(0), M = (size_t)c->o->iarg[0];
    const T *s1 = X(0), *s2 = X(1), mu = (T)c->o->farg[0];
    T *rm = Y(0), *rv = Y(1);
    for (size_t k = 0; k < C; k++) {
        rm[k] = ((T)1 - mu) * rm[k] + mu * (s1[k] / (T)M);
        rv[k] = ((T)1 - mu) * rv[k] + mu * (s2[k] / (T)(M - 1));
    }
    return VT_OK;
}

static vt_err SFX(bn_gamma_grad)(plain_ctx *c)
{
    size_t C = NOUT(0), M = (size_t)c->o->iarg[0];
    const T *g2 = X(0), *s2 = X(1);
    T *d = Y(0);
    for (size_t k = 0; k < C; k++) d[k] = g2[k] * SFX(rstd)(s2[k], M, c->o->farg[0]);
    return VT_OK;
}

static vt_err SFX(bn_backward)(plain_ctx *c)
{
    size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
    const T *dy = X(0), *xc = X(1), *s2 = X(2), *g1 = X(3), *g2 = X(4), *g = X(5);
    T *dx = Y(0);
    for (size_t i = 0; i < M; i++)
        for (size_t k = 0; k < C; k++) {
            T r = SFX(rstd)(s2[k], M, c->o->farg[0]);
            dx[i * C + k] = (g[k] * r) * ((dy[i * C + k] - g1[k] / (T)M) - xc[i * C + k] * ((r * r) * g2[k] / (T)M));
        }
    return VT_OK;
}

static vt_err SFX(bn_eval)(plain_ctx *c)
{
    size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
    const T *x = X(0), *rm = X(1), *rv = X(2), *g = X(3), *b = X(4);
    T *y = Y(0);
    for (size_t i = 0; i < M; i++)
        for (size_t k = 0; k < C; k++)
            y[i * C + k] = g[k] * ((x[i * C + k] - rm[k]) / SQRT(rv[k] + (T)c->o->farg[0])) + b[k];
    return VT_OK;
}

static vt_err SFX(maxpool)(plain_ctx *c)
{
    const int64_t *a = c->o->iarg;
    SFX(vt_maxpool)((size_t)a[0], (size_t)a[1], (size_t)a[2], (size_t)a[3], (size_t)a[4], X(0), Y(0));
    return VT_OK;
}

static vt_err SFX(maxpool_backward)(plain_ctx *c)
{
    const int64_t *a = c->o->iarg;
    SFX(vt_maxpool_backward)((size_t)a[0], (size_t)a[1], (size_t)a[2], (size_t)a[3], (size_t)a[4], X(0), X(1), Y(0));
    return VT_OK;
}

static vt_err SFX(avgpool)(plain_ctx *c)
{
    size_t B = (size_t)c->o->iarg[0], HW = (size_t)c->o->iarg[1], C = SHAPE(0, 1);
    const T *x = X(0);
    T *y = Y(0);
    for (size_t b = 0; b < B; b++)
        for (size_t k = 0; k < C; k++) {
            T s = 0;
            for (size_t t = 0; t < HW; t++) s += x[(b * HW + t) * C + k];
            y[b * C + k] = s / (T)HW;
        }
    return VT_OK;
}

static vt_err SFX(avgpool_backward)(plain_ctx *c)
{
    size_t B = (size_t)c->o->iarg[0], HW = (size_t)c->o->iarg[1], C = SHAPE(0, 1);
    const T *dy = X(0);
    T *dx = Y(0);
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < HW; t++)
            for (size_t k = 0; k < C; k++) dx[(b * HW + t) * C + k] = dy[b * C + k] / (T)HW;
    return VT_OK;
}

/* ---- transformers (the same index logic and masks as the verified kinds) */

static vt_err SFX(windows)(plain_ctx *c)
{
    const int64_t *a = c->o->iarg;
    const size_t B = (size_t)a[0], Tn = (size_t)a[1];
    VT_RETURN_ERROR_IF(!c->ds || !c->ds->text || c->ds->n < Tn + 1 || c->ds->n_classes > (uint64_t)a[3], VT_ERR_ARG,
                       "text windows need a text dataset of more than %zu tokens and at most %lld in its vocabulary",
                       Tn, (long long)a[3]);
    uint8_t *tok = TP(c->p, c->o->out[0]), *tgt = TP(c->p, c->o->out[1]);
    for (size_t b = 0; b < B; b++) {
        uint64_t s0 = vt_window_start((uint64_t)a[2], c->step, b, c->ds->n, Tn);
        memcpy(tok + b * Tn, c->ds->x + s0, Tn);
        memcpy(tgt + b * Tn, c->ds->x + s0 + 1, Tn);
    }
    return VT_OK;
}

static vt_err SFX(embed)(plain_ctx *c)
{
    const vt_tensor *tk = &c->p->prog.t[c->o->in[0]], *wt = &c->p->prog.t[c->o->in[1]];
    const size_t Tn = tk->shape[1], C = wt->shape[1];
    const uint8_t *tok = TP(c->p, c->o->in[0]);
    const T *wte = X(1), *wpe = X(2);
    T *y = Y(0);
    for (size_t r = 0; r < tk->n; r++)
        VT_RETURN_ERROR_IF(tok[r] >= wt->shape[0], VT_ERR_ARG, "token %u is not in the vocabulary", tok[r]);
    for (size_t r = 0; r < tk->n; r++)
        for (size_t k = 0; k < C; k++) y[r * C + k] = wte[tok[r] * C + k] + wpe[(r % Tn) * C + k];
    return VT_OK;
}

static vt_err SFX(onehot)(plain_ctx *c)
{
    SFX(vt_onehot)(c->p->prog.t[c->o->in[0]].n, (size_t)c->o->iarg[0], TP(c->p, c->o->in[0]), Y(0));
    return VT_OK;
}

static vt_err SFX(pos_grad)(plain_ctx *c)
{
    const size_t B = (size_t)c->o->iarg[0], Tn = (size_t)c->o->iarg[1], C = SHAPE(0, 1);
    const T *dx = X(0);
    T *d = Y(0);
    for (size_t i = 0; i < Tn * C; i++) d[i] = 0;
    for (size_t b = 0; b < B; b++)
        for (size_t i = 0; i < Tn * C; i++) d[i] += dx[b * Tn * C + i];
    return VT_OK;
}

static vt_err SFX(row_sum)(plain_ctx *c)
{
    const size_t M = SHAPE(0, 0), N = SHAPE(0, 1);
    const T *a = X(0), *b = c->o->n_in > 1 ? X(1) : NULL;
    T *s = Y(0);
    for (size_t i = 0; i < M; i++) {
        T acc = 0;
        for (size_t j = 0; j < N; j++) acc += b ? a[i * N + j] * b[i * N + j] : a[i * N + j];
        s[i] = acc;
    }
    return VT_OK;
}

static vt_err SFX(ln_center)(plain_ctx *c)
{
    const size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
    const T *x = X(0), *s1 = X(1);
    T *y = Y(0);
    for (size_t i = 0; i < M; i++)
        for (size_t k = 0; k < C; k++) y[i * C + k] = x[i * C + k] - s1[i] / (T)C;
    return VT_OK;
}

static T SFX(ln_r)(T s2, size_t C, double eps) { return (T)1 / SQRT(s2 / (T)C + (T)eps); }

static vt_err SFX(ln_norm)(plain_ctx *c)
{
    const size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
    const T *xc = X(0), *s2 = X(1);
    T *y = Y(0);
    for (size_t i = 0; i < M; i++) {
        T r = SFX(ln_r)(s2[i], C, c->o->farg[0]);
        for (size_t k = 0; k < C; k++) y[i * C + k] = xc[i * C + k] * r;
    }
    return VT_OK;
}

static vt_err SFX(affine)(plain_ctx *c)
{
    const size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
    const T *x = X(0), *g = X(1), *b = c->o->n_in > 2 ? X(2) : NULL;
    T *y = Y(0);
    for (size_t i = 0; i < M; i++)
        for (size_t k = 0; k < C; k++) y[i * C + k] = g[k] * x[i * C + k] + (b ? b[k] : (T)0);
    return VT_OK;
}

static vt_err SFX(ln_backward)(plain_ctx *c)
{
    const size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
    const T *dyg = X(0), *xh = X(1), *s2 = X(2), *g1 = X(3), *g2 = X(4);
    T *dx = Y(0);
    for (size_t i = 0; i < M; i++) {
        T r = SFX(ln_r)(s2[i], C, c->o->farg[0]);
        for (size_t k = 0; k < C; k++) dx[i * C + k] = r * ((dyg[i * C + k] - g1[i] / (T)C) - xh[i * C + k] * (g2[i] / (T)C));
    }
    return VT_OK;
}

static vt_err SFX(gelu)(plain_ctx *c)
{
    const T *x = X(0), *dy = c->o->n_in > 1 ? X(1) : NULL, k0 = (T)0.7978845608028654, a0 = (T)0.044715;
    T *y = Y(0);
    for (size_t i = 0; i < NOUT(0); i++) {
        T v = x[i], th = TANH(k0 * (v + a0 * v * v * v));
        if (!dy) y[i] = (T)0.5 * v * ((T)1 + th);
        else y[i] = dy[i] * ((T)0.5 * ((T)1 + th) + (T)0.5 * v * ((T)1 - th * th) * k0 * ((T)1 + (T)3 * a0 * v * v));
    }
    return VT_OK;
}

static vt_err SFX(heads)(plain_ctx *c)
{
    const int64_t *a = c->o->iarg;
    size_t B = (size_t)a[0], Tn = (size_t)a[1], H = (size_t)a[2], D = (size_t)a[3];
    if (c->o->kind == VT_OPK_HEADS_SPLIT) SFX(vt_heads_split)(B, Tn, H, D, X(0), Y(0), Y(1), Y(2));
    else if (c->o->kind == VT_OPK_HEADS_JOIN) SFX(vt_heads_join)(B, Tn, H, D, X(0), X(1), X(2), Y(0));
    else if (c->o->kind == VT_OPK_HEADS_UNMERGE) SFX(vt_heads_unmerge)(B, Tn, H, D, X(0), Y(0));
    else SFX(vt_heads_merge)(B, Tn, H, D, X(0), Y(0));
    return VT_OK;
}

static vt_err SFX(bmm)(plain_ctx *c)
{
    const int64_t *a = c->o->iarg;
    int G = (int)a[0], M = (int)a[1], N = (int)a[2], K = (int)a[3], ta = (int)a[4], tb = (int)a[5];
    for (int g = 0; g < G; g++)
        GEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, (T)1,
             X(0) + (size_t)g * M * K, ta ? M : K, X(1) + (size_t)g * K * N, tb ? K : N, (T)0, Y(0) + (size_t)g * M * N,
             N);
    return VT_OK;
}

static vt_err SFX(softmax_causal)(plain_ctx *c)
{
    const size_t R = SHAPE(0, 0), Tn = SHAPE(0, 1);
    const T sc = (T)c->o->farg[0];
    const T *z = X(0);
    T *p = Y(0);
    for (size_t i = 0; i < R; i++) {
        size_t t = i % Tn;
        const T *zi = z + i * Tn;
        T *pi = p + i * Tn;
        if (c->o->kind == VT_OPK_SOFTMAX_BWD) {
            const T *dp = X(1) + i * Tn, s = X(2)[i];
            for (size_t j = 0; j < Tn; j++) pi[j] = sc * (zi[j] * (dp[j] - s));
            continue;
        }
        T m = sc * zi[0], den = 0;
        for (size_t j = 1; j <= t; j++)
            if (sc * zi[j] > m) m = sc * zi[j];
        for (size_t j = 0; j <= t; j++) den += pi[j] = EXP(sc * zi[j] - m);
        for (size_t j = 0; j < Tn; j++) pi[j] = j <= t ? pi[j] / den : (T)0;
    }
    return VT_OK;
}

static vt_err SFX(dropout)(plain_ctx *c)
{
    const T *x = X(0), sc = (T)(1.0 / (1.0 - c->o->farg[0]));
    T *y = Y(0);
    for (size_t i = 0; i < NOUT(0); i++)
        y[i] = vt_dropout_keep((uint64_t)c->o->iarg[0], c->step, (uint32_t)c->o->iarg[1], i, c->o->farg[0]) ? x[i] * sc
                                                                                                        : (T)0;
    return VT_OK;
}

static vt_err SFX(sumsq)(plain_ctx *c)
{
    const T *g = X(0);
    T s = 0;
    for (size_t i = 0; i < c->p->prog.t[c->o->in[0]].n; i++) s += g[i] * g[i];
    *Y(0) = s;
    return VT_OK;
}

static vt_err SFX(sum_scalars)(plain_ctx *c)
{
    T s = 0;
    for (uint32_t k = 0; k < c->o->n_in; k++) s += *X(k);
    *Y(0) = s;
    return VT_OK;
}

static vt_err SFX(clip_factor)(plain_ctx *c)
{
    T nrm = SQRT(*X(0)), mx = (T)c->o->farg[0];
    *Y(0) = nrm > mx ? mx / (nrm + (T)1e-6) : (T)1;
    return VT_OK;
}

static vt_err SFX(adam_scaled)(plain_ctx *c)
{
    const double b1 = c->o->farg[0], b2 = c->o->farg[1];
    const T *g = X(0), f = *X(3), tb1 = (T)b1, tb2 = (T)b2, c1 = (T)(1.0 - b1), c2 = (T)(1.0 - b2);
    T *m1 = Y(0), *m2 = Y(1);
    for (size_t i = 0; i < NOUT(0); i++) {
        T gi = g[i] * f;
        m1[i] = tb1 * m1[i] + c1 * gi;
        m2[i] = tb2 * m2[i] + (c2 * gi) * gi;
    }
    return VT_OK;
}

static vt_err SFX(adamw)(plain_ctx *c)
{
    const double b1 = c->o->farg[0], b2 = c->o->farg[1], s = f64_of(c->p, c->o->in[3]);
    const T *m1 = X(1), *m2 = X(2), lr = (T)f64_of(c->p, c->o->in[4]), eps = (T)c->o->farg[2], wd = (T)c->o->farg[3];
    const T bc1 = (T)(1.0 - pow(b1, s)), bc2 = (T)(1.0 - pow(b2, s));
    T *w = Y(0);
    for (size_t i = 0; i < NOUT(0); i++) w[i] = w[i] - lr * ((m1[i] / bc1) / (SQRT(m2[i] / bc2) + eps) + wd * w[i]);
    return VT_OK;
}

/* the schedule computes no tensor values: one function for both instances (vt_plain.c) */
static vt_err SFX(schedule)(plain_ctx *c) { return schedule(c); }

/* the table, generated from the list (vt_kinds.h): kind VT_OPK_<ID> is SFX(<impl>) */
static const plain_fn SFX(PLAIN)[VT_OPK_COUNT] = {
#define VTI_PLAIN_ROW(ID, nm, fam, rd, ni, no, nia, nfa, ia, fa, rx, dev, impl) [VT_OPK_##ID] = SFX(impl),
    VT_KINDS(VTI_PLAIN_ROW)
#undef VTI_PLAIN_ROW
};

#undef T
#undef X
#undef Y
#undef NOUT
#undef SHAPE

#undef VT_PLAIN_T
#undef SFX
#undef GEMM
#undef BE_GEMM
#undef EXP
#undef LOG
#undef SQRT
#undef TANH
#undef TMIN
