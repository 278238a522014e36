/* vt_ops_gpt.c - the operation kinds of the character-level transformer (vt_ops.h; docs/gpt.md):
 * random text windows, embeddings and their gradients, layer normalisation, the attention's head
 * split and merge (exact), batched GEMMs (one reduction per element, the batch split in the exact
 * evaluator), the causal softmax and its backward pass, GELU, dropout, the global gradient norm and
 * its clipping factor, and AdamW. Sequences are [B*T, C]; per-head tensors [B*H*T, D]. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../kernels/vt_gpt.h"
#include "vt_ops_int.h"
#include "vt_philox.h"

#define ERR_IF(cond, ...) VT_RETURN_ERROR_IF(cond, VT_ERR_INTERNAL, __VA_ARGS__)
#include "vt_philox_hd.h" /* VT_RNG_DROPOUT, vti_dropout_keep */
#define VT_RNG_WINDOWS 5

static vt_err f32_shape(const vt_program *p, const vt_opdesc *o, uint32_t id, size_t n, const char *what)
{
    return want(p, o, id, VT_DT_F32, n, what);
}

/* ------------------------------------------------------------ LOAD_WINDOWS */
/* -> tokens [B, T] U8, targets [B*T] U8; iarg B, T, seed, vocabulary */

vt_err vti_windows_check(const vt_program *p, const vt_opdesc *o)
{
    const int64_t *a = o->iarg;
    ERR_IF(a[0] < 1 || a[1] < 1 || a[0] > 65536 || a[1] > 65536 || a[3] < 2 || a[3] > 256,
           "program: \"%s\": bad window arguments", o->name);
    VT_FORWARD_IF_ERROR(want(p, o, o->out[0], VT_DT_U8, (size_t)(a[0] * a[1]), "tokens"));
    return want(p, o, o->out[1], VT_DT_U8, (size_t)(a[0] * a[1]), "targets");
}

/* the start of window b of step s: uniform in [0, n - T - 1] from two Philox words */
uint64_t vt_window_start(uint64_t seed, uint64_t step, uint64_t b, uint64_t n, uint64_t T)
{
    uint64_t hi = vt_rand_u32(seed, VT_RNG_WINDOWS, step, 2 * b), lo = vt_rand_u32(seed, VT_RNG_WINDOWS, step, 2 * b + 1);
    return ((hi << 32) | lo) % (n - T);
}

vt_err vti_windows_exec(vt_opctx *c)
{
    const int64_t *a = c->o->iarg;
    const size_t B = (size_t)a[0], T = (size_t)a[1];
    VT_RETURN_ERROR_IF(!c->ds || !c->ds->text, VT_ERR_ARG, "text windows need a text dataset");
    VT_RETURN_ERROR_IF(c->ds->n < T + 1, VT_ERR_ARG, "the text has %zu tokens: too few for windows of %zu", c->ds->n,
                       T);
    VT_RETURN_ERROR_IF(c->ds->n_classes > (uint64_t)a[3], VT_ERR_ARG, "the text has %u tokens in its vocabulary, the "
                       "model %lld", c->ds->n_classes, (long long)a[3]);
    uint8_t *tok = (uint8_t *)OUT(0), *tgt = (uint8_t *)OUT(1);
    for (size_t b = 0; b < B; b++) {
        uint64_t s0 = vt_window_start((uint64_t)a[2], c->step, b, c->ds->n, T);
        memcpy(tok + b * T, c->ds->x + s0, T);
        memcpy(tgt + b * T, c->ds->x + s0 + 1, T);
    }
    return VT_OK;
}

void vti_windows_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    memset(out, 0, sizeof *out);
    out->bytes = 2.0 * (double)T(p, o->out[0])->n;
}

/* ------------------------------------------------------------ embeddings */
/* EMBED: tokens [B, T] U8, wte [V, C], wpe [T, C] -> x [B*T, C] */

vt_err vti_embed_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *tok = T(p, o->in[0]), *wte = T(p, o->in[1]), *wpe = T(p, o->in[2]);
    ERR_IF(tok->rank != 2 || tok->dtype != VT_DT_U8 || wte->rank != 2 || wpe->rank != 2 || wte->dtype != VT_DT_F32 ||
               wpe->dtype != VT_DT_F32 || wpe->shape[0] != tok->shape[1] || wpe->shape[1] != wte->shape[1],
           "program: \"%s\": bad embedding shapes", o->name);
    return f32_shape(p, o, o->out[0], tok->n * wte->shape[1], "output");
}

vt_err vti_embed_exec(vt_opctx *c)
{
    const vt_tensor *tok = T(c->prog, c->o->in[0]), *wte = T(c->prog, c->o->in[1]);
    const uint8_t *t = (const uint8_t *)IN(0);
    for (size_t i = 0; i < tok->n; i++)
        VT_RETURN_ERROR_IF(t[i] >= wte->shape[0], VT_ERR_ARG, "token %u at %zu is not in the vocabulary", t[i], i);
    vt_embed(tok->shape[0], tok->shape[1], wte->shape[1], t, IN(1), IN(2), c->s.x64);
    ROUND(c->s.x64, NULL, tok->n, wte->shape[1], OUT(0));
    return VT_OK;
}

void vti_embed_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 1, out); }

/* ONEHOT: tokens [n] U8 -> [n, V] F32 (exact); iarg V */
vt_err vti_onehot_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *tok = T(p, o->in[0]);
    ERR_IF(tok->dtype != VT_DT_U8 || o->iarg[0] < 1 || o->iarg[0] > 256, "program: \"%s\": bad one-hot", o->name);
    return f32_shape(p, o, o->out[0], tok->n * (size_t)o->iarg[0], "output");
}

vt_err vti_onehot_exec(vt_opctx *c)
{
    vt_onehot_f32(T(c->prog, c->o->in[0])->n, (size_t)c->o->iarg[0], (const uint8_t *)IN(0), OUT(0));
    return VT_OK;
}

void vti_onehot_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    memset(out, 0, sizeof *out);
    out->bytes = 4.0 * (double)T(p, o->out[0])->n;
}

/* POS_GRAD: dx [B*T, C] -> dwpe [T, C] = sum over b; iarg B, T */
vt_err vti_pos_grad_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    ERR_IF(o->iarg[0] < 1 || o->iarg[1] < 1 || x->shape[0] != (uint64_t)(o->iarg[0] * o->iarg[1]),
           "program: \"%s\": bad position-gradient arguments", o->name);
    return f32_shape(p, o, o->out[0], (size_t)o->iarg[1] * x->shape[1], "output");
}

vt_err vti_pos_grad_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    const size_t B = (size_t)c->o->iarg[0], Tn = (size_t)c->o->iarg[1], C = x->shape[1];
    static const float one = 1.0f;
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_reduce(c->exec, Tn, C, B, (vt_strided){IN(0), C, 1, Tn * C, 0, 0},
                                  (vt_strided){&one, 0, 0, 0, 0, 0}, c->s.x64, c->s.b64, &bd));
    ROUND(c->s.x64, &bd, Tn, C, OUT(0));
    return VT_OK;
}

void vti_pos_grad_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    out->flop = 4.0 * (double)T(p, o->in[0])->n;
    out->bytes = 4.0 * ((double)T(p, o->in[0])->n + (double)T(p, o->out[0])->n);
    out->scratch = (double)T(p, o->out[0])->n;
    out->norms = 0;
}

/* ------------------------------------------------------------ row reductions */
/* ROW_SUM: x [M, N] -> [M]; ROW_DOT: a, b [M, N] -> [M] */

vt_err vti_row_sum_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    for (uint32_t k = 1; k < o->n_in; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[k], x->n, "second factor"));
    return f32_shape(p, o, o->out[0], x->shape[0], "output");
}

vt_err vti_row_sum_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    const size_t M = x->shape[0], N = x->shape[1];
    static const float one = 1.0f;
    vt_strided b = c->o->n_in > 1 ? (vt_strided){IN(1), N, N, 1, 0, 0} : (vt_strided){&one, 0, 0, 0, 0, 0};
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(
        vt_reduce(c->exec, M, 1, N, (vt_strided){IN(0), N, N, 1, 0, 0}, b, c->s.x64, c->s.b64, &bd));
    ROUND(c->s.x64, &bd, M, 1, OUT(0));
    return VT_OK;
}

void vti_row_sum_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    out->flop = 4.0 * (double)T(p, o->in[0])->n;
    out->bytes = 4.0 * (double)o->n_in * (double)T(p, o->in[0])->n;
    out->scratch = (double)T(p, o->out[0])->n;
    out->norms = 0;
}

/* ------------------------------------------------------------ layer normalisation */

static vt_err rowvec(const vt_program *p, const vt_opdesc *o, uint32_t id, size_t M)
{
    return f32_shape(p, o, id, M, "row vector");
}

static vt_err colvec(const vt_program *p, const vt_opdesc *o, uint32_t id, size_t C)
{
    return f32_shape(p, o, id, C, "column vector");
}

static vt_err eps_ok(const vt_opdesc *o)
{
    ERR_IF(!(o->farg[0] > 0 && o->farg[0] < 1), "program: \"%s\": eps must be in (0, 1)", o->name);
    return VT_OK;
}

/* LN_CENTER: x [M, C], S1 [M] -> xc */
vt_err vti_ln_center_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    VT_FORWARD_IF_ERROR(rowvec(p, o, o->in[1], x->shape[0]));
    return f32_shape(p, o, o->out[0], x->n, "output");
}

vt_err vti_ln_center_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_ln_center(x->shape[0], x->shape[1], IN(0), IN(1), c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_ln_center_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 2, out); }

/* LN_NORM: xc [M, C], S2 [M] -> xhat; farg eps */
vt_err vti_ln_norm_check(const vt_program *p, const vt_opdesc *o)
{
    VT_FORWARD_IF_ERROR(eps_ok(o));
    return vti_ln_center_check(p, o);
}

vt_err vti_ln_norm_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_ln_norm(x->shape[0], x->shape[1], IN(0), IN(1), c->o->farg[0], c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_ln_norm_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 2, out); }

/* AFFINE: x [M, C], gamma [C] (, beta [C]) -> gamma x (+ beta) */
vt_err vti_affine_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    for (uint32_t k = 1; k < o->n_in; k++) VT_FORWARD_IF_ERROR(colvec(p, o, o->in[k], x->shape[1]));
    return f32_shape(p, o, o->out[0], x->n, "output");
}

vt_err vti_affine_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_affine(x->shape[0], x->shape[1], IN(0), IN(1), c->o->n_in > 2 ? IN(2) : NULL, c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_affine_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 2, out); }

/* LN_BWD: dyg, xhat [M, C], S2, G1, G2 [M] -> dx; farg eps */
vt_err vti_ln_backward_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    VT_FORWARD_IF_ERROR(eps_ok(o));
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[1], x->n, "normalised input"));
    for (uint32_t k = 2; k < 5; k++) VT_FORWARD_IF_ERROR(rowvec(p, o, o->in[k], x->shape[0]));
    return f32_shape(p, o, o->out[0], x->n, "output");
}

vt_err vti_ln_backward_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_ln_backward(x->shape[0], x->shape[1], IN(0), IN(1), IN(2), IN(3), IN(4), c->o->farg[0], c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_ln_backward_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 6, out);
}

/* ------------------------------------------------------------ GELU */

vt_err vti_gelu_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }

vt_err vti_gelu_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    if (c->o->n_in == 1) vt_gelu(n, IN(0), c->s.x64);
    else vt_gelu_backward(n, IN(0), IN(1), c->s.x64);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

void vti_gelu_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 40, out); }

/* ------------------------------------------------------------ heads */
/* iarg B, T, H, D. SPLIT: qkv [B*T, 3C] -> q, k, v [B*H*T, D]; MERGE: o -> y [B*T, C];
 * JOIN: dq, dk, dv -> dqkv [B*T, 3C]. Exact. */

static vt_err heads_args(const vt_opdesc *o, size_t *B, size_t *Tn, size_t *H, size_t *D)
{
    const int64_t *a = o->iarg;
    ERR_IF(a[0] < 1 || a[1] < 1 || a[2] < 1 || a[3] < 1 || a[0] > 65536 || a[1] > 65536 || a[2] > 1024 || a[3] > 4096,
           "program: \"%s\": bad head arguments", o->name);
    *B = (size_t)a[0], *Tn = (size_t)a[1], *H = (size_t)a[2], *D = (size_t)a[3];
    return VT_OK;
}

vt_err vti_heads_check(const vt_program *p, const vt_opdesc *o)
{
    size_t B = 0, Tn = 0, H = 0, D = 0;
    VT_FORWARD_IF_ERROR(heads_args(o, &B, &Tn, &H, &D));
    size_t n = B * Tn * H * D;
    if (o->kind == VT_OPK_HEADS_SPLIT) {
        VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[0], 3 * n, "qkv"));
        for (uint32_t k = 0; k < 3; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->out[k], n, "head tensor"));
        return VT_OK;
    }
    if (o->kind == VT_OPK_HEADS_JOIN) {
        for (uint32_t k = 0; k < 3; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[k], n, "head tensor"));
        return f32_shape(p, o, o->out[0], 3 * n, "qkv");
    }
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[0], n, "head tensor"));
    return f32_shape(p, o, o->out[0], n, "output");
}

vt_err vti_heads_exec(vt_opctx *c)
{
    size_t B = 0, Tn = 0, H = 0, D = 0;
    VT_FORWARD_IF_ERROR(heads_args(c->o, &B, &Tn, &H, &D));
    if (c->o->kind == VT_OPK_HEADS_SPLIT) vt_heads_split_f32(B, Tn, H, D, IN(0), OUT(0), OUT(1), OUT(2));
    else if (c->o->kind == VT_OPK_HEADS_JOIN) vt_heads_join_f32(B, Tn, H, D, IN(0), IN(1), IN(2), OUT(0));
    else if (c->o->kind == VT_OPK_HEADS_UNMERGE) vt_heads_unmerge_f32(B, Tn, H, D, IN(0), OUT(0));
    else vt_heads_merge_f32(B, Tn, H, D, IN(0), OUT(0));
    return VT_OK;
}

void vti_heads_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    memset(out, 0, sizeof *out);
    for (uint32_t k = 0; k < o->n_in; k++) out->bytes += 8.0 * (double)T(p, o->in[k])->n;
}

/* ------------------------------------------------------------ BMM */
/* iarg G, M, N, K, ta, tb: C [G*M, N], C_g = op(A_g) op(B_g); A_g [M, K] (ta = 1: [K, M]),
 * B_g [K, N] (tb = 1: [N, K]). One reduction per element (vt_reduce, batched operands). */

static vt_err bmm_args(const vt_opdesc *o, size_t *G, size_t *M, size_t *N, size_t *K)
{
    const int64_t *a = o->iarg;
    ERR_IF(a[0] < 1 || a[1] < 1 || a[2] < 1 || a[3] < 1 || a[0] > (1 << 24) || a[1] > (1 << 20) || a[2] > (1 << 20) ||
               a[3] > (1 << 20) || (a[4] != 0 && a[4] != 1) || (a[5] != 0 && a[5] != 1),
           "program: \"%s\": bad batched GEMM arguments", o->name);
    *G = (size_t)a[0], *M = (size_t)a[1], *N = (size_t)a[2], *K = (size_t)a[3];
    return VT_OK;
}

vt_err vti_bmm_check(const vt_program *p, const vt_opdesc *o)
{
    size_t G = 0, M = 0, N = 0, K = 0, t;
    VT_FORWARD_IF_ERROR(bmm_args(o, &G, &M, &N, &K));
    ERR_IF(__builtin_mul_overflow(G, M, &t) || __builtin_mul_overflow(t, K > N ? K : N, &t) ||
               __builtin_mul_overflow(G * (K > M ? K : M), N, &t),
           "program: \"%s\": the batched GEMM is too large", o->name);
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[0], G * M * K, "A"));
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[1], G * K * N, "B"));
    return f32_shape(p, o, o->out[0], G * M * N, "C");
}

vt_err vti_bmm_exec(vt_opctx *c)
{
    size_t G = 0, M = 0, N = 0, K = 0;
    VT_FORWARD_IF_ERROR(bmm_args(c->o, &G, &M, &N, &K));
    const int ta = (int)c->o->iarg[4], tb = (int)c->o->iarg[5];
    const float *A = IN(0), *Bm = IN(1);
    /* each batch a GEMM in the executor's order (BLAS or the project's loops); the bound of element
     * (g, i, j) is the batch's Cauchy-Schwarz bound coef * |row i of op(A_g)| * |column j of op(B_g)|,
     * the norms fixed-order FP64 sums computed here: the same value for every party, THE bound of
     * the element (there is no tight fallback) */
    const double coef = vt_bound_coef_red(&c->exec->bound, K, K);
    VT_RETURN_ERROR_IF(!(coef >= 0.0), VT_ERR_LIMIT, "batched GEMM: no bound coefficient for K = %zu", K);
    for (size_t g = 0; g < G; g++) {
        const float *Ag = A + g * M * K, *Bg = Bm + g * K * N;
        /* the GEMM without vt_gemm's norms (the same computation), and the operand norms in one fixed
         * sequential order whatever the executor's (vt_gemm's depend on its panels and order when K is
         * panelled): the bound is one function of the operands for every party */
        VT_FORWARD_IF_ERROR(vt_gemm_plain(c->exec, ta, tb, M, N, K, Ag, Bg, c->s.x64 + g * M * N));
        for (size_t i = 0; i < M; i++) {
            double s = 0;
            for (size_t k = 0; k < K; k++) {
                double v = ta ? Ag[k * M + i] : Ag[i * K + k];
                s += v * v;
            }
            c->s.rn[i] = sqrt(s);
        }
        for (size_t j = 0; j < N; j++) {
            double s = 0;
            for (size_t k = 0; k < K; k++) {
                double v = tb ? Bg[j * K + k] : Bg[k * N + j];
                s += v * v;
            }
            c->s.cn[j] = sqrt(s);
        }
        double *b = c->s.b64 + g * M * N;
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) b[i * N + j] = coef * c->s.rn[i] * c->s.cn[j];
    }
    vt_bounds bd;
    memset(&bd, 0, sizeof bd);
    bd.kind = VT_BOUNDS_ARRAY;
    bd.b = c->s.b64;
    /* the exact evaluator: element (g*M + i, j) = sum_k op(A_g)(i, k) op(B_g)(k, j) */
    bd.xa = A, bd.xa_si = ta ? 1 : K, bd.xa_sj = 0, bd.xa_sk = ta ? M : 1, bd.xa_sg = M * K;
    bd.xb = Bm, bd.xb_si = 0, bd.xb_sj = tb ? K : 1, bd.xb_sk = tb ? 1 : N, bd.xb_sg = K * N;
    bd.xK = K, bd.x_rpb = M;
    ROUND(c->s.x64, &bd, G * M, N, OUT(0));
    return VT_OK;
}

void vti_bmm_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    double G = (double)o->iarg[0], M = (double)o->iarg[1], N = (double)o->iarg[2], K = (double)o->iarg[3];
    (void)p;
    out->flop = 2 * G * M * N * K;
    out->bytes = 4 * G * (M * K + K * N + M * N);
    out->scratch = G * M * N;
    out->norms = M > N ? M : N;
}

/* ------------------------------------------------------------ causal softmax */
/* SOFTMAX_CAUSAL: s [R, T] -> p; iarg T; farg scale. SOFTMAX_BWD: p, dp [R, T], S [R] -> dz. */

vt_err vti_softmax_causal_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    ERR_IF(o->iarg[0] < 1 || x->shape[1] != (uint64_t)o->iarg[0] || x->shape[0] % (uint64_t)o->iarg[0] ||
               !(o->farg[0] > 0),
           "program: \"%s\": bad causal softmax arguments", o->name);
    if (o->kind == VT_OPK_SOFTMAX_BWD) {
        VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[1], x->n, "probability gradient"));
        VT_FORWARD_IF_ERROR(rowvec(p, o, o->in[2], x->shape[0]));
    }
    return f32_shape(p, o, o->out[0], x->n, "output");
}

vt_err vti_softmax_causal_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    if (c->o->kind == VT_OPK_SOFTMAX_BWD)
        vt_softmax_backward(x->shape[0], x->shape[1], c->o->farg[0], IN(0), IN(1), IN(2), c->s.x64);
    else vt_causal_softmax(x->shape[0], x->shape[1], c->o->farg[0], IN(0), c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_softmax_causal_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 30, out);
}

/* ------------------------------------------------------------ dropout */
/* x -> y (forward) or dy -> dx (backward, the forward's mask); iarg seed, key; farg p in [0, 1) */

vt_err vti_dropout_check(const vt_program *p, const vt_opdesc *o)
{
    ERR_IF(!(o->farg[0] >= 0 && o->farg[0] < 1) || o->iarg[1] < 0 || o->iarg[1] > UINT32_MAX ||
               T(p, o->out[0])->n >= ((size_t)1 << 32),
           "program: \"%s\": bad dropout arguments (or 2^32 elements or more)", o->name);
    return vti_same_n_check(p, o);
}

int vt_dropout_keep(uint64_t seed, uint64_t step, uint32_t key, uint64_t e, double p)
{
    return vti_dropout_keep(seed, step, key, e, p);
}

vt_err vti_dropout_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    uint8_t *keep = (uint8_t *)c->s.f32s; /* n bytes of the FP32 scratch (n floats) */
    for (size_t i = 0; i < n; i++)
        keep[i] = (uint8_t)vt_dropout_keep((uint64_t)c->o->iarg[0], c->step, (uint32_t)c->o->iarg[1], i, c->o->farg[0]);
    vt_dropout(n, IN(0), keep, c->o->farg[0], c->s.x64);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

void vti_dropout_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 20, out); }

/* ------------------------------------------------------------ gradient norm and clipping */
/* SUMSQ: g -> [1] = sum g^2. SUM_SCALARS: n scalars [1] -> their sum [1]. CLIP_FACTOR: S [1] ->
 * factor [1]; farg max_norm. */

vt_err vti_sumsq_check(const vt_program *p, const vt_opdesc *o)
{
    ERR_IF(T(p, o->in[0])->dtype != VT_DT_F32, "program: \"%s\": not F32", o->name);
    return f32_shape(p, o, o->out[0], 1, "output");
}

vt_err vti_sumsq_exec(vt_opctx *c)
{
    size_t n = T(c->prog, c->o->in[0])->n;
    const float *g = IN(0);
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_reduce(c->exec, 1, 1, n, (vt_strided){g, 0, 0, 1, 0, 0}, (vt_strided){g, 0, 0, 1, 0, 0},
                                  c->s.x64, c->s.b64, &bd));
    ROUND(c->s.x64, &bd, 1, 1, OUT(0));
    return VT_OK;
}

void vti_sumsq_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    out->flop = 4.0 * (double)T(p, o->in[0])->n;
    out->bytes = 4.0 * (double)T(p, o->in[0])->n;
    out->scratch = 1;
    out->norms = 0;
}

vt_err vti_sum_scalars_check(const vt_program *p, const vt_opdesc *o)
{
    ERR_IF(o->n_in < 1 || o->n_in > 4096, "program: \"%s\": 1..4096 scalars", o->name);
    for (uint32_t k = 0; k < o->n_in; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[k], 1, "scalar"));
    return f32_shape(p, o, o->out[0], 1, "output");
}

vt_err vti_sum_scalars_exec(vt_opctx *c)
{
    /* the scalars side by side (the reduction's first operand: lives until rounded) */
    float *v = c->s.f32s;
    for (uint32_t k = 0; k < c->o->n_in; k++) v[k] = *IN(k);
    static const float one = 1.0f;
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_reduce(c->exec, 1, 1, c->o->n_in, (vt_strided){v, 0, 0, 1, 0, 0},
                                  (vt_strided){&one, 0, 0, 0, 0, 0}, c->s.x64, c->s.b64, &bd));
    ROUND(c->s.x64, &bd, 1, 1, OUT(0));
    return VT_OK;
}

void vti_sum_scalars_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    (void)p;
    memset(out, 0, sizeof *out);
    out->flop = 4.0 * o->n_in, out->bytes = 4.0 * o->n_in, out->scratch = o->n_in;
}

vt_err vti_clip_factor_check(const vt_program *p, const vt_opdesc *o)
{
    ERR_IF(!(o->farg[0] > 0), "program: \"%s\": max_norm must be positive", o->name);
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[0], 1, "squared norm"));
    return f32_shape(p, o, o->out[0], 1, "factor");
}

vt_err vti_clip_factor_exec(vt_opctx *c)
{
    double f = vt_clip_factor(*IN(0), c->o->farg[0]);
    ROUND(&f, NULL, 1, 1, OUT(0));
    return VT_OK;
}

void vti_clip_factor_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    (void)p, (void)o;
    memset(out, 0, sizeof *out);
    out->flop = 4, out->bytes = 8, out->scratch = 1;
}

/* ------------------------------------------------------------ Adam(W) */
/* ADAM_MOMENTS_SCALED: g, m, v, s [1] -> m, v; farg b1, b2. ADAMW_APPLY: w, m, v, t, lr -> w;
 * farg b1, b2, eps, wd. */

vt_err vti_adam_scaled_check(const vt_program *p, const vt_opdesc *o)
{
    size_t n = T(p, o->in[0])->n;
    for (uint32_t k = 0; k < 3; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[k], n, "input"));
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[3], 1, "clipping factor"));
    for (uint32_t k = 0; k < 2; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->out[k], n, "output"));
    return VT_OK;
}

vt_err vti_adam_scaled_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    vt_adam_moments_scaled(n, IN(0), IN(1), IN(2), *IN(3), c->o->farg[0], c->o->farg[1], c->s.x64, c->s.x64 + n);
    ROUND(c->s.x64, NULL, 1, 2 * n, c->s.f32s);
    memcpy(OUT(0), c->s.f32s, n * sizeof(float));
    memcpy(OUT(1), c->s.f32s + n, n * sizeof(float));
    return VT_OK;
}

void vti_adam_scaled_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 12, out); }

vt_err vti_adamw_check(const vt_program *p, const vt_opdesc *o)
{
    size_t n = T(p, o->out[0])->n;
    for (uint32_t k = 0; k < 3; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[k], n, "input"));
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->out[0], n, "output"));
    VT_FORWARD_IF_ERROR(want(p, o, o->in[3], VT_DT_F64, 1, "step count"));
    ERR_IF(!(o->farg[3] >= 0), "program: \"%s\": weight decay must be >= 0", o->name);
    return want(p, o, o->in[4], VT_DT_F64, 1, "learning rate");
}

vt_err vti_adamw_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    double t, lr;
    memcpy(&t, IN(3), 8);
    memcpy(&lr, IN(4), 8);
    VT_RETURN_ERROR_IF(!(t >= 1 && t <= 0x1p53) || t != (double)(uint64_t)t, VT_ERR_ARG,
                       "AdamW's step count %g is not a step", t);
    const double *f = c->o->farg;
    vt_adamw_apply(n, IN(0), IN(1), IN(2), lr, f[0], f[1], f[2], f[3], (uint64_t)t, c->s.x64);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

void vti_adamw_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 14, out); }
