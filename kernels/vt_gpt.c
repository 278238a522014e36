/* vt_gpt.c - the transformer's CPU kernels (vt_gpt.h). The movement kernels are written once for
 * a type T: this file includes itself for float and double. */
#ifndef VT_GPT_T /* ================================================================ outer part */

#include "vt_gpt.h"

#include <math.h>
#include <string.h>

#include "../rounding/vt_exact.h"
#include "vt_gpt_hd.h"
#include "vt_kernels_hd.h"
#include "vt_kernels_int.h"
#include "vt_math.h"

/* The chains below run over the threads in parts of rows or elements (vti_par_range): each output
 * element is its own chain (a row's softmax its own row), the bits the same for every split. */
typedef struct {
    size_t C;
    const float *x, *a, *b, *c, *d; /* the kernel's inputs, in its argument order */
    const uint8_t *u8;
    double eps, f1, f2, *out;
} gpt_a;

static void ln_center_r(const void *p, size_t r0, size_t r1)
{
    const gpt_a *a = p;
    for (size_t i = r0; i < r1; i++)
        for (size_t c = 0; c < a->C; c++) a->out[i * a->C + c] = vti_ln_center1(a->x[i * a->C + c], a->a[i], a->C);
}

void vt_ln_center(size_t M, size_t C, const float *x, const float *s1, double *out)
{
    vti_par_range(M, VTI_ROWS_GRAIN(C), ln_center_r, &(gpt_a){.C = C, .x = x, .a = s1, .out = out});
}

#define ln_rstd vti_ln_rstd

static void ln_norm_r(const void *p, size_t r0, size_t r1)
{
    const gpt_a *a = p;
    for (size_t i = r0; i < r1; i++) {
        double r = ln_rstd(a->a[i], a->C, a->eps);
        for (size_t c = 0; c < a->C; c++) a->out[i * a->C + c] = (double)a->x[i * a->C + c] * r;
    }
}

void vt_ln_norm(size_t M, size_t C, const float *xc, const float *s2, double eps, double *out)
{
    vti_par_range(M, VTI_ROWS_GRAIN(C), ln_norm_r, &(gpt_a){.C = C, .x = xc, .a = s2, .eps = eps, .out = out});
}

typedef struct {
    size_t C;
    const float *x, *gamma, *beta;
    double *out;
} affine_a;

static void affine_r(const void *p, size_t r0, size_t r1)
{
    const affine_a *a = p;
    const size_t C = a->C;
    for (size_t i = r0; i < r1; i++)
        for (size_t c = 0; c < C; c++)
            a->out[i * C + c] = vti_affine1(a->x[i * C + c], a->gamma[c], a->beta ? &a->beta[c] : NULL);
}

void vt_affine(size_t M, size_t C, const float *x, const float *gamma, const float *beta, double *out)
{
    vti_par_range(M, VTI_ROWS_GRAIN(C), affine_r, &(affine_a){C, x, gamma, beta, out});
}

static void ln_backward_r(const void *p, size_t r0, size_t r1)
{
    const gpt_a *a = p;
    const size_t C = a->C;
    for (size_t i = r0; i < r1; i++)
        for (size_t c = 0; c < C; c++)
            a->out[i * C + c] = vti_ln_backward1(a->x[i * C + c], a->a[i * C + c], a->b[i], a->c[i], a->d[i], C, a->eps);
}

void vt_ln_backward(size_t M, size_t C, const float *dyg, const float *xhat, const float *s2, const float *g1,
                    const float *g2, double eps, double *out)
{
    vti_par_range(M, VTI_ROWS_GRAIN(C), ln_backward_r,
                  &(gpt_a){.C = C, .x = dyg, .a = xhat, .b = s2, .c = g1, .d = g2, .eps = eps, .out = out});
}

/* vti_gelu1 and vti_gelu_backward1 in stages, the tanh of a part at once (vt_tanh_n: the same bits
 * as the element-by-element chain); a->a is dy for the backward pass */
static void gelu_r(const void *p, size_t lo, size_t hi)
{
    const gpt_a *a = p;
    const float *x = a->x;
    double *out = a->out;
    for (size_t i = lo; i < hi; i++) out[i] = vti_gelu_u(x[i]);
    vt_tanh_n(hi - lo, out + lo, out + lo);
    for (size_t i = lo; i < hi; i++)
        out[i] = a->a ? vti_gelu_backward_from(x[i], a->a[i], out[i]) : vti_gelu_from(x[i], out[i]);
}

void vt_gelu(size_t n, const float *x, double *out)
{
    vti_par_range(n, VTI_GRAIN, gelu_r, &(gpt_a){.x = x, .out = out});
}

void vt_gelu_backward(size_t n, const float *x, const float *dy, double *out)
{
    vti_par_range(n, VTI_GRAIN, gelu_r, &(gpt_a){.x = x, .a = dy, .out = out});
}

static void causal_softmax_r(const void *pa, size_t r0, size_t r1)
{
    const gpt_a *a = pa;
    const size_t T = a->C;
    for (size_t i = r0; i < r1; i++) { /* vti_causal_softmax_row, the row's exponentials at once */
        size_t t = i % T;
        double *p = a->out + i * T;
        vti_causal_softmax_args(t, a->f1, a->x + i * T, p);
        vt_exp_n(t + 1, p, p);
        vti_normalise_row(t + 1, p);
        for (size_t j = t + 1; j < T; j++) p[j] = 0.0;
    }
}

void vt_causal_softmax(size_t R, size_t T, double scale, const float *z, double *out)
{
    vti_par_range(R, VTI_ROWS_GRAIN(T), causal_softmax_r, &(gpt_a){.C = T, .x = z, .f1 = scale, .out = out});
}

static void softmax_backward_r(const void *pa, size_t r0, size_t r1)
{
    const gpt_a *a = pa;
    const size_t T = a->C;
    for (size_t i = r0; i < r1; i++)
        for (size_t j = 0; j < T; j++)
            a->out[i * T + j] = vti_softmax_backward1(a->x[i * T + j], a->a[i * T + j], a->b[i], a->f1);
}

void vt_softmax_backward(size_t R, size_t T, double scale, const float *p, const float *dp, const float *s,
                         double *out)
{
    vti_par_range(R, VTI_ROWS_GRAIN(T), softmax_backward_r,
                  &(gpt_a){.C = T, .x = p, .a = dp, .b = s, .f1 = scale, .out = out});
}

static void dropout_r(const void *pa, size_t lo, size_t hi)
{
    const gpt_a *a = pa;
    for (size_t i = lo; i < hi; i++) a->out[i] = vti_dropout1(a->x[i], a->u8[i], a->f1);
}

void vt_dropout(size_t n, const float *x, const uint8_t *keep, double p, double *out)
{
    vti_par_range(n, VTI_GRAIN, dropout_r, &(gpt_a){.x = x, .u8 = keep, .f1 = p, .out = out});
}

void vt_embed(size_t B, size_t T, size_t C, const uint8_t *tok, const float *wte, const float *wpe, double *out)
{
    for (size_t r = 0; r < B * T; r++)
        for (size_t c = 0; c < C; c++) out[r * C + c] = (double)wte[tok[r] * C + c] + (double)wpe[(r % T) * C + c];
}

void vt_adam_moments_scaled(size_t n, const float *g, const float *m, const float *v, float s, double b1, double b2,
                            double *m_out, double *v_out)
{
    const double c1 = 1.0 - b1, c2 = 1.0 - b2;
    for (size_t i = 0; i < n; i++) vti_adam_scaled1(g[i], m[i], v[i], s, b1, b2, c1, c2, &m_out[i], &v_out[i]);
}

typedef struct {
    const float *w, *m, *v;
    double lr, bc1, bc2, eps, wd, *out;
} adamw_a;

static void adamw_r(const void *p, size_t lo, size_t hi)
{
    const adamw_a *a = p;
    for (size_t i = lo; i < hi; i++) a->out[i] = vti_adamw1(a->w[i], a->m[i], a->v[i], a->lr, a->bc1, a->bc2, a->eps, a->wd);
}

void vt_adamw_apply(size_t n, const float *w, const float *m_new, const float *v_new, double lr, double b1, double b2,
                    double eps, double wd, uint64_t t, double *w_out)
{
    /* b^t: the same multiplications as square-and-multiply with a last unused squaring */
    const double bc1 = 1.0 - vti_powi(b1, t), bc2 = 1.0 - vti_powi(b2, t);
    vti_par_range(n, VTI_GRAIN, adamw_r, &(adamw_a){w, m_new, v_new, lr, bc1, bc2, eps, wd, w_out});
}

double vt_clip_factor(float sqnorm, double max_norm) { return vti_clip_factor1(sqnorm, max_norm); }

#define VT_GPT_T float
#define SFX(n) n##_f32
#include "vt_gpt.c"
#undef VT_GPT_T
#undef SFX
#define VT_GPT_T double
#define SFX(n) n##_f64
#include "vt_gpt.c"
#undef VT_GPT_T
#undef SFX

#else /* ================================================= the movement kernels for one T */

#define T_ VT_GPT_T

void SFX(vt_heads_split)(size_t B, size_t T, size_t H, size_t D, const T_ *qkv, T_ *q, T_ *k, T_ *v)
{
    const size_t C = H * D;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                const T_ *src = qkv + (b * T + t) * 3 * C + h * D;
                size_t o = ((b * H + h) * T + t) * D;
                memcpy(q + o, src, D * sizeof(T_));
                memcpy(k + o, src + C, D * sizeof(T_));
                memcpy(v + o, src + 2 * C, D * sizeof(T_));
            }
}

void SFX(vt_heads_merge)(size_t B, size_t T, size_t H, size_t D, const T_ *o, T_ *y)
{
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++)
                memcpy(y + (b * T + t) * H * D + h * D, o + ((b * H + h) * T + t) * D, D * sizeof(T_));
}

void SFX(vt_heads_unmerge)(size_t B, size_t T, size_t H, size_t D, const T_ *y, T_ *o)
{
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++)
                memcpy(o + ((b * H + h) * T + t) * D, y + (b * T + t) * H * D + h * D, D * sizeof(T_));
}

void SFX(vt_heads_join)(size_t B, size_t T, size_t H, size_t D, const T_ *q, const T_ *k, const T_ *v, T_ *qkv)
{
    const size_t C = H * D;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                T_ *dst = qkv + (b * T + t) * 3 * C + h * D;
                size_t o = ((b * H + h) * T + t) * D;
                memcpy(dst, q + o, D * sizeof(T_));
                memcpy(dst + C, k + o, D * sizeof(T_));
                memcpy(dst + 2 * C, v + o, D * sizeof(T_));
            }
}

void SFX(vt_onehot)(size_t n, size_t V, const uint8_t *tok, T_ *out)
{
    for (size_t i = 0; i < n * V; i++) out[i] = 0;
    for (size_t i = 0; i < n; i++)
        if (tok[i] < V) out[i * V + tok[i]] = 1;
}

#undef T_

#endif
