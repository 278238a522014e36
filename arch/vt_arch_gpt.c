/* vt_arch_gpt.c - the builder of arch "gpt": a character-level GPT (pre-LN transformer) on a text
 * dataset (docs/gpt.md).
 *
 *   input   B random windows of T + 1 tokens (load_windows); x = wte[tok] + wpe[t] (+ dropout)
 *   block   x += dropout(attn(ln_1(x))),  x += dropout(mlp(ln_2(x)))
 *           attn: qkv = h Wqkv + b, heads, S = q k^T, P = causal softmax(S / sqrt(D)), O = P v,
 *                 merge, O Wo + b;   mlp: gelu(h W1 + b1) W2 + b2
 *   head    logits = ln_f(x) wte^T (gpt_tie) or ln_f(x) W_lm; softmax cross-entropy per position
 *   update  the global gradient norm (a reduction), the clipping factor, AdamW (weight decay on the
 *           matrices only); the schedule of the recipe (warm-up + cosine by default)
 *
 * With dropout, evaluation has its own pass: the same forward pass without the dropout operations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_arch.h"

#define ARR(...) ((const uint32_t[]){__VA_ARGS__})
#define IARG(...) ((const int64_t[]){__VA_ARGS__})
#define FARG(...) ((const double[]){__VA_ARGS__})
#define MAXL 48
#define MAXP (16 * MAXL + 8)

typedef struct { /* a layer norm: parameters, step tensors, gradients */
    uint32_t g, b, s1, xc, s2, xh, y;
} ln_t;

typedef struct {
    ln_t ln1, ln2;
    uint32_t wqkv, bqkv, wo, bo, w1, b1, w2, b2;
    uint32_t qkv0, qkv, q, k, v, s, p, o, om, a0, a, ad, x_mid, f0, f, g, m0, m, md, x_out;
} layer_t;

typedef struct {
    vt_program *p;
    const vt_recipe *rcp;
    uint32_t B, T, C, H, D, V, L, BT;
    int drop, eval;
    uint32_t wte, wpe, wlm, tok, tgt, x0, x0d, tstep, lr;
    ln_t lnf;
    uint32_t logits, probs, loss;
    layer_t l[MAXL];
    uint32_t params[MAXP], grads[MAXP], np, nkey;
    uint8_t decay[MAXP];
} gpt;

static const char *nm(char *buf, size_t cap, const char *pre, const char *what)
{
    snprintf(buf, cap, "%s.%s", pre, what);
    return buf;
}

static uint32_t mat(gpt *n, vt_tclass cls, uint32_t rows, uint32_t cols, const char *pre, const char *what)
{
    char b[128];
    return vt_prog_tensor(n->p, cls, VT_DT_F32, 2, ARR(rows, cols), "%s", nm(b, sizeof b, pre, what));
}

static uint32_t vec(gpt *n, vt_tclass cls, uint32_t len, const char *pre, const char *what)
{
    char b[128];
    return vt_prog_tensor(n->p, cls, VT_DT_F32, 1, ARR(len), "%s", nm(b, sizeof b, pre, what));
}

/* U(-a, a) with a = sqrt(6 / 5000) = 0.0346: a standard deviation of 0.02, GPT-2's */
#define INIT_W 5000

static uint32_t param(gpt *n, uint32_t rank, const uint32_t *shape, int init, int decay, const char *pre,
                      const char *what)
{
    char b[128];
    uint32_t t = vt_prog_tensor(n->p, VT_TC_PARAM, VT_DT_F32, rank, shape, "%s", nm(b, sizeof b, pre, what));
    if (init == 1) vt_prog_init_one(n->p, t);
    else if (init == 2) vt_prog_init_he(n->p, t, INIT_W);
    if (n->np < MAXP) n->decay[n->np] = (uint8_t)decay, n->params[n->np++] = t;
    return t;
}

static void ln_params(gpt *n, ln_t *ln, const char *pre)
{
    ln->g = param(n, 1, ARR(n->C), 1, 0, pre, "weight");
    ln->b = param(n, 1, ARR(n->C), 0, 0, pre, "bias");
}

static void ln_tensors(gpt *n, ln_t *ln, const char *pre)
{
    ln->s1 = vec(n, VT_TC_ACT, n->BT, pre, "sum");
    ln->xc = mat(n, VT_TC_ACT, n->BT, n->C, pre, "centered");
    ln->s2 = vec(n, VT_TC_ACT, n->BT, pre, "sumsq");
    ln->xh = mat(n, VT_TC_ACT, n->BT, n->C, pre, "normalised");
    ln->y = mat(n, VT_TC_ACT, n->BT, n->C, pre, "out");
}

static void op(gpt *n, uint16_t kind, const uint32_t *in, uint32_t ni, const uint32_t *out, uint32_t no,
               const int64_t *ia, uint32_t nia, const double *fa, uint32_t nfa, const char *pre, const char *what)
{
    vt_prog_op(n->p, kind, in, ni, out, no, ia, nia, fa, nfa, "%s %s", pre, what);
}

static void ln_fwd(gpt *n, const ln_t *ln, uint32_t x, const char *pre)
{
    op(n, VT_OPK_ROW_SUM, ARR(x), 1, ARR(ln->s1), 1, NULL, 0, NULL, 0, pre, "sum");
    op(n, VT_OPK_LN_CENTER, ARR(x, ln->s1), 2, ARR(ln->xc), 1, NULL, 0, NULL, 0, pre, "centre");
    op(n, VT_OPK_ROW_DOT, ARR(ln->xc, ln->xc), 2, ARR(ln->s2), 1, NULL, 0, NULL, 0, pre, "sum of squares");
    op(n, VT_OPK_LN_NORM, ARR(ln->xc, ln->s2), 2, ARR(ln->xh), 1, NULL, 0, FARG(n->rcp->ln_eps), 1, pre, "normalise");
    op(n, VT_OPK_AFFINE, ARR(ln->xh, ln->g, ln->b), 3, ARR(ln->y), 1, NULL, 0, NULL, 0, pre, "scale and shift");
}

/* dy -> dx of layer norm ln; its parameter gradients into the parameter table */
static uint32_t ln_bwd(gpt *n, const ln_t *ln, uint32_t dy, const char *pre, uint32_t *gg, uint32_t *gb)
{
    char w[64];
    *gb = vec(n, VT_TC_GRAD, n->C, pre, "bias.grad");
    *gg = vec(n, VT_TC_GRAD, n->C, pre, "weight.grad");
    uint32_t dyg = mat(n, VT_TC_GRAD, n->BT, n->C, pre, "out.grad.scaled");
    uint32_t g1 = vec(n, VT_TC_GRAD, n->BT, pre, "grad.sum"), g2 = vec(n, VT_TC_GRAD, n->BT, pre, "grad.dot");
    snprintf(w, sizeof w, "in.grad");
    uint32_t dx = mat(n, VT_TC_GRAD, n->BT, n->C, pre, w);
    op(n, VT_OPK_COLSUM, ARR(dy), 1, ARR(*gb), 1, NULL, 0, NULL, 0, pre, "bias gradient");
    op(n, VT_OPK_COLDOT, ARR(dy, ln->xh), 2, ARR(*gg), 1, NULL, 0, NULL, 0, pre, "weight gradient");
    op(n, VT_OPK_SCALE_COLS, ARR(dy, ln->g), 2, ARR(dyg), 1, NULL, 0, NULL, 0, pre, "gradient times weight");
    op(n, VT_OPK_ROW_SUM, ARR(dyg), 1, ARR(g1), 1, NULL, 0, NULL, 0, pre, "gradient sum");
    op(n, VT_OPK_ROW_DOT, ARR(dyg, ln->xh), 2, ARR(g2), 1, NULL, 0, NULL, 0, pre, "gradient dot normalised");
    op(n, VT_OPK_LN_BACKWARD, ARR(dyg, ln->xh, ln->s2, g1, g2), 5, ARR(dx), 1, NULL, 0, FARG(n->rcp->ln_eps), 1, pre,
       "backward");
    return dx;
}

/* y0 = x W (M x K times K x N), y = y0 + b */
static void lin_fwd(gpt *n, uint32_t x, uint32_t W, uint32_t b, uint32_t y0, uint32_t y, uint32_t M, uint32_t K,
                    uint32_t N, const char *pre)
{
    op(n, VT_OPK_MATMUL, ARR(x, W), 2, ARR(y0), 1, IARG(0, 0, M, N, K), 5, NULL, 0, pre, "forward GEMM");
    op(n, VT_OPK_BIAS_ADD, ARR(y0, b), 2, ARR(y), 1, NULL, 0, NULL, 0, pre, "bias add");
}

/* dW = x^T dy, db = colsum(dy), dx = dy W^T (dx may be UINT32_MAX: none) */
static void lin_bwd(gpt *n, uint32_t x, uint32_t W, uint32_t dy, uint32_t gw, uint32_t gb, uint32_t dx, uint32_t M,
                    uint32_t K, uint32_t N, const char *pre)
{
    op(n, VT_OPK_MATMUL, ARR(x, dy), 2, ARR(gw), 1, IARG(1, 0, K, N, M), 5, NULL, 0, pre, "weight-gradient GEMM");
    if (gb != UINT32_MAX) op(n, VT_OPK_COLSUM, ARR(dy), 1, ARR(gb), 1, NULL, 0, NULL, 0, pre, "bias gradient");
    if (dx != UINT32_MAX)
        op(n, VT_OPK_MATMUL, ARR(dy, W), 2, ARR(dx), 1, IARG(0, 1, M, K, N), 5, NULL, 0, pre, "input-gradient GEMM");
}

static uint32_t dropout(gpt *n, uint32_t x, uint32_t y, const char *pre, uint32_t key)
{
    if (!n->drop) return x;
    if (n->eval) return x; /* evaluation: the dropout's input is its output */
    op(n, VT_OPK_DROPOUT, ARR(x), 1, ARR(y), 1, IARG((int64_t)n->rcp->seed, key), 2, FARG(n->rcp->dropout), 1, pre,
       "dropout");
    return y;
}

/* the forward pass (training, or evaluation without dropout) */
static void forward(gpt *n)
{
    const uint32_t BT = n->BT, C = n->C, H = n->H, D = n->D, T = n->T, G = n->B * n->H;
    const double scale = 1.0 / sqrt((double)D);
    uint32_t key = 1;
    op(n, VT_OPK_EMBED, ARR(n->tok, n->wte, n->wpe), 3, ARR(n->x0), 1, NULL, 0, NULL, 0, "embedding", "");
    uint32_t x = dropout(n, n->x0, n->x0d, "embedding", key++);
    for (uint32_t l = 0; l < n->L; l++) {
        layer_t *ly = &n->l[l];
        char pre[32], a1[48], a2[48], at[48], mp[48];
        snprintf(pre, sizeof pre, "h%u", l);
        snprintf(a1, sizeof a1, "h%u.ln_1", l), snprintf(a2, sizeof a2, "h%u.ln_2", l);
        snprintf(at, sizeof at, "h%u.attn", l), snprintf(mp, sizeof mp, "h%u.mlp", l);
        ln_fwd(n, &ly->ln1, x, a1);
        lin_fwd(n, ly->ln1.y, ly->wqkv, ly->bqkv, ly->qkv0, ly->qkv, BT, C, 3 * C, at);
        op(n, VT_OPK_HEADS_SPLIT, ARR(ly->qkv), 1, ARR(ly->q, ly->k, ly->v), 3, IARG(n->B, T, H, D), 4, NULL, 0, at,
           "heads");
        op(n, VT_OPK_BMM, ARR(ly->q, ly->k), 2, ARR(ly->s), 1, IARG(G, T, T, D, 0, 1), 6, NULL, 0, at, "scores");
        op(n, VT_OPK_SOFTMAX_CAUSAL, ARR(ly->s), 1, ARR(ly->p), 1, IARG(T), 1, FARG(scale), 1, at, "causal softmax");
        op(n, VT_OPK_BMM, ARR(ly->p, ly->v), 2, ARR(ly->o), 1, IARG(G, T, D, T, 0, 0), 6, NULL, 0, at,
           "weighted sum");
        op(n, VT_OPK_HEADS_MERGE, ARR(ly->o), 1, ARR(ly->om), 1, IARG(n->B, T, H, D), 4, NULL, 0, at, "merge heads");
        char pj[56];
        snprintf(pj, sizeof pj, "%s.c_proj", at);
        lin_fwd(n, ly->om, ly->wo, ly->bo, ly->a0, ly->a, BT, C, C, pj);
        uint32_t a = dropout(n, ly->a, ly->ad, at, key++);
        op(n, VT_OPK_ADD, ARR(x, a), 2, ARR(ly->x_mid), 1, NULL, 0, NULL, 0, pre, "attention residual");
        ln_fwd(n, &ly->ln2, ly->x_mid, a2);
        snprintf(pj, sizeof pj, "%s.c_fc", mp);
        lin_fwd(n, ly->ln2.y, ly->w1, ly->b1, ly->f0, ly->f, BT, C, 4 * C, pj);
        op(n, VT_OPK_GELU, ARR(ly->f), 1, ARR(ly->g), 1, NULL, 0, NULL, 0, mp, "gelu");
        snprintf(pj, sizeof pj, "%s.c_proj", mp);
        lin_fwd(n, ly->g, ly->w2, ly->b2, ly->m0, ly->m, BT, 4 * C, C, pj);
        uint32_t m = dropout(n, ly->m, ly->md, mp, key++);
        op(n, VT_OPK_ADD, ARR(ly->x_mid, m), 2, ARR(ly->x_out), 1, NULL, 0, NULL, 0, pre, "mlp residual");
        x = ly->x_out;
    }
    ln_fwd(n, &n->lnf, x, "ln_f");
    if (n->rcp->gpt_tie)
        op(n, VT_OPK_MATMUL, ARR(n->lnf.y, n->wte), 2, ARR(n->logits), 1, IARG(0, 1, BT, n->V, C), 5, NULL, 0,
           "lm_head", "forward GEMM (tied to wte)");
    else
        op(n, VT_OPK_MATMUL, ARR(n->lnf.y, n->wlm), 2, ARR(n->logits), 1, IARG(0, 0, BT, n->V, C), 5, NULL, 0,
           "lm_head", "forward GEMM");
    op(n, VT_OPK_SOFTMAX, ARR(n->logits), 1, ARR(n->probs), 1, NULL, 0, NULL, 0, "softmax", "");
}

/* the gradient of a dropout's input from its output's dy: the same mask (stream key), or dy itself
 * without dropout */
static uint32_t dropout_bwd(gpt *n, uint32_t dy, const char *pre, uint32_t key)
{
    if (!n->drop) return dy;
    uint32_t dx = mat(n, VT_TC_GRAD, n->BT, n->C, pre, "out.grad");
    op(n, VT_OPK_DROPOUT, ARR(dy), 1, ARR(dx), 1, IARG((int64_t)n->rcp->seed, key), 2, FARG(n->rcp->dropout), 1, pre,
       "dropout backward");
    return dx;
}

static void set_grad(gpt *n, uint32_t param, uint32_t grad)
{
    for (uint32_t i = 0; i < n->np; i++)
        if (n->params[i] == param) n->grads[i] = grad;
}

/* ---- the builder's steps, in the order their tensors and operations are numbered */

#define GPT_DIMS                                                                                                       \
    vt_program *p = n->p;                                                                                              \
    const vt_recipe *rcp = n->rcp;                                                                                     \
    const uint32_t B = n->B, T = n->T, C = n->C, V = n->V, BT = n->BT, G = B * n->H, D = n->D;                         \
    (void)p, (void)rcp, (void)B, (void)T, (void)C, (void)V, (void)BT, (void)G, (void)D

/* the state's parameters, in PyTorch's order */
static void gpt_params(gpt *n)
{
    GPT_DIMS;
    n->wte = param(n, 2, ARR(V, C), 2, 1, "wte", "weight");
    n->wpe = param(n, 2, ARR(T, C), 2, 1, "wpe", "weight");
    for (uint32_t l = 0; l < n->L; l++) {
        layer_t *ly = &n->l[l];
        char a1[48], a2[48], q[48], o[48], f[48], m[48];
        snprintf(a1, sizeof a1, "h%u.ln_1", l), snprintf(a2, sizeof a2, "h%u.ln_2", l);
        snprintf(q, sizeof q, "h%u.attn.c_attn", l), snprintf(o, sizeof o, "h%u.attn.c_proj", l);
        snprintf(f, sizeof f, "h%u.mlp.c_fc", l), snprintf(m, sizeof m, "h%u.mlp.c_proj", l);
        ln_params(n, &ly->ln1, a1);
        ly->wqkv = param(n, 2, ARR(C, 3 * C), 2, 1, q, "weight");
        ly->bqkv = param(n, 1, ARR(3 * C), 0, 0, q, "bias");
        ly->wo = param(n, 2, ARR(C, C), 2, 1, o, "weight");
        ly->bo = param(n, 1, ARR(C), 0, 0, o, "bias");
        ln_params(n, &ly->ln2, a2);
        ly->w1 = param(n, 2, ARR(C, 4 * C), 2, 1, f, "weight");
        ly->b1 = param(n, 1, ARR(4 * C), 0, 0, f, "bias");
        ly->w2 = param(n, 2, ARR(4 * C, C), 2, 1, m, "weight");
        ly->b2 = param(n, 1, ARR(C), 0, 0, m, "bias");
    }
    ln_params(n, &n->lnf, "ln_f");
    n->wlm = rcp->gpt_tie ? UINT32_MAX : param(n, 2, ARR(C, V), 2, 1, "lm_head", "weight");
}

/* the step's inputs and the forward pass's activations */
static void gpt_tensors(gpt *n)
{
    GPT_DIMS;
    n->tok = vt_prog_tensor(p, VT_TC_INPUT, VT_DT_U8, 2, ARR(B, T), "tokens");
    n->tgt = vt_prog_tensor(p, VT_TC_INPUT, VT_DT_U8, 1, ARR(BT), "targets");
    n->tstep = vt_prog_tensor(p, VT_TC_INPUT, VT_DT_F64, 0, NULL, "step");
    n->lr = vt_prog_tensor(p, VT_TC_INPUT, VT_DT_F64, 0, NULL, "lr");
    /* activations */
    n->x0 = mat(n, VT_TC_ACT, BT, C, "embedding", "out");
    n->x0d = n->drop ? mat(n, VT_TC_ACT, BT, C, "embedding", "dropout") : n->x0;
    for (uint32_t l = 0; l < n->L; l++) {
        layer_t *ly = &n->l[l];
        char a1[48], a2[48], at[48], mp[48];
        snprintf(a1, sizeof a1, "h%u.ln_1", l), snprintf(a2, sizeof a2, "h%u.ln_2", l);
        snprintf(at, sizeof at, "h%u.attn", l), snprintf(mp, sizeof mp, "h%u.mlp", l);
        ln_tensors(n, &ly->ln1, a1);
        ly->qkv0 = mat(n, VT_TC_ACT, BT, 3 * C, at, "qkv.matmul");
        ly->qkv = mat(n, VT_TC_ACT, BT, 3 * C, at, "qkv");
        ly->q = mat(n, VT_TC_ACT, G * T, D, at, "q");
        ly->k = mat(n, VT_TC_ACT, G * T, D, at, "k");
        ly->v = mat(n, VT_TC_ACT, G * T, D, at, "v");
        ly->s = mat(n, VT_TC_ACT, G * T, T, at, "scores");
        ly->p = mat(n, VT_TC_ACT, G * T, T, at, "probs");
        ly->o = mat(n, VT_TC_ACT, G * T, D, at, "weighted");
        ly->om = mat(n, VT_TC_ACT, BT, C, at, "merged");
        ly->a0 = mat(n, VT_TC_ACT, BT, C, at, "c_proj.matmul");
        ly->a = mat(n, VT_TC_ACT, BT, C, at, "out");
        ly->ad = n->drop ? mat(n, VT_TC_ACT, BT, C, at, "dropout") : ly->a;
        ly->x_mid = mat(n, VT_TC_ACT, BT, C, at, "residual");
        ln_tensors(n, &ly->ln2, a2);
        ly->f0 = mat(n, VT_TC_ACT, BT, 4 * C, mp, "c_fc.matmul");
        ly->f = mat(n, VT_TC_ACT, BT, 4 * C, mp, "c_fc.out");
        ly->g = mat(n, VT_TC_ACT, BT, 4 * C, mp, "gelu");
        ly->m0 = mat(n, VT_TC_ACT, BT, C, mp, "c_proj.matmul");
        ly->m = mat(n, VT_TC_ACT, BT, C, mp, "out");
        ly->md = n->drop ? mat(n, VT_TC_ACT, BT, C, mp, "dropout") : ly->m;
        ly->x_out = mat(n, VT_TC_ACT, BT, C, mp, "residual");
    }
    ln_tensors(n, &n->lnf, "ln_f");
    n->logits = mat(n, VT_TC_ACT, BT, V, "lm_head", "out");
    n->probs = mat(n, VT_TC_ACT, BT, V, "softmax", "probs");
    n->loss = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 0, NULL, "loss");
}

/* the logits' and ln_f's gradients (and lm_head's weight gradient, *gte_head); returns the gradient of
 * the last block's output */
static uint32_t gpt_head_backward(gpt *n, uint32_t *gte_head_out)
{
    GPT_DIMS;
    uint32_t dlog = mat(n, VT_TC_GRAD, BT, V, "lm_head", "out.grad");
    uint32_t dlnf = mat(n, VT_TC_GRAD, BT, C, "ln_f", "out.grad");
    uint32_t gte_head = *gte_head_out = mat(n, VT_TC_GRAD, V, C, "lm_head", rcp->gpt_tie ? "wte.grad" : "weight.grad");
    vt_prog_op(p, VT_OPK_XENT_BWD, ARR(n->probs, n->tgt), 2, ARR(dlog), 1, NULL, 0, NULL, 0, "logits gradient");
    if (rcp->gpt_tie) {
        vt_prog_op(p, VT_OPK_MATMUL, ARR(dlog, n->lnf.y), 2, ARR(gte_head), 1, IARG(1, 0, V, C, BT), 5, NULL, 0,
                   "lm_head weight-gradient GEMM (wte)");
        vt_prog_op(p, VT_OPK_MATMUL, ARR(dlog, n->wte), 2, ARR(dlnf), 1, IARG(0, 0, BT, C, V), 5, NULL, 0,
                   "lm_head input-gradient GEMM");
    } else {
        p->t[gte_head].shape[0] = C, p->t[gte_head].shape[1] = V; /* [C, V] like lm_head.weight */
        lin_bwd(n, n->lnf.y, n->wlm, dlog, gte_head, UINT32_MAX, dlnf, BT, C, V, "lm_head");
        set_grad(n, n->wlm, gte_head);
    }
    uint32_t gg, gb;
    uint32_t dx = ln_bwd(n, &n->lnf, dlnf, "ln_f", &gg, &gb);
    set_grad(n, n->lnf.g, gg), set_grad(n, n->lnf.b, gb);
    return dx;
}

/* back through layer norm ln (its output gradient dh; its gradients set) to the residual stream: dres plus
 * its input gradient, a new tensor tpre.tname (the operation "<block> <branch> residual backward") */
static uint32_t ln_residual_bwd(gpt *n, ln_t *ln, uint32_t dh, const char *lpre, uint32_t dres, const char *tpre,
                                const char *tname, const char *block, const char *branch)
{
    uint32_t gg, gb;
    uint32_t dl = ln_bwd(n, ln, dh, lpre, &gg, &gb);
    set_grad(n, ln->g, gg), set_grad(n, ln->b, gb);
    uint32_t out = mat(n, VT_TC_GRAD, n->BT, n->C, tpre, tname);
    vt_prog_op(n->p, VT_OPK_ADD, ARR(dres, dl), 2, ARR(out), 1, NULL, 0, NULL, 0, "%s %s residual backward", block,
               branch);
    return out;
}

/* block l's MLP backward from dx, the gradient of x_out = x_mid + dropout(m); returns the gradient of x_mid */
static uint32_t gpt_mlp_backward(gpt *n, uint32_t l, uint32_t dx, uint32_t *key)
{
    GPT_DIMS;
    layer_t *ly = &n->l[l];
    char pre[32], a2[48], at[48], mp[48], pj[56];
    snprintf(pre, sizeof pre, "h%u", l);
    snprintf(a2, sizeof a2, "h%u.ln_2", l);
    snprintf(at, sizeof at, "h%u.attn", l), snprintf(mp, sizeof mp, "h%u.mlp", l);
    /* mlp: dx is the gradient of x_out = x_mid + dropout(m) */
    uint32_t dm = dropout_bwd(n, dx, mp, (*key)--);
    uint32_t gw2 = mat(n, VT_TC_GRAD, 4 * C, C, mp, "c_proj.weight.grad"), gb2 = vec(n, VT_TC_GRAD, C, mp, "c_proj.bias.grad");
    uint32_t dg = mat(n, VT_TC_GRAD, BT, 4 * C, mp, "gelu.grad"), df = mat(n, VT_TC_GRAD, BT, 4 * C, mp, "c_fc.out.grad");
    uint32_t gw1 = mat(n, VT_TC_GRAD, C, 4 * C, mp, "c_fc.weight.grad"), gb1 = vec(n, VT_TC_GRAD, 4 * C, mp, "c_fc.bias.grad");
    uint32_t dh2 = mat(n, VT_TC_GRAD, BT, C, a2, "out.grad");
    snprintf(pj, sizeof pj, "%s.c_proj", mp);
    lin_bwd(n, ly->g, ly->w2, dm, gw2, gb2, dg, BT, 4 * C, C, pj);
    vt_prog_op(p, VT_OPK_GELU_BWD, ARR(ly->f, dg), 2, ARR(df), 1, NULL, 0, NULL, 0, "%s gelu backward", mp);
    snprintf(pj, sizeof pj, "%s.c_fc", mp);
    lin_bwd(n, ly->ln2.y, ly->w1, df, gw1, gb1, dh2, BT, C, 4 * C, pj);
    set_grad(n, ly->w2, gw2), set_grad(n, ly->b2, gb2), set_grad(n, ly->w1, gw1), set_grad(n, ly->b1, gb1);
    return ln_residual_bwd(n, &ly->ln2, dh2, a2, dx, at, "residual.grad", pre, "mlp");
}

/* block l's attention backward from dxm, the gradient of x_mid = x + dropout(a); returns the gradient of x */
static uint32_t gpt_attn_backward(gpt *n, uint32_t l, uint32_t dxm, uint32_t *key)
{
    GPT_DIMS;
    layer_t *ly = &n->l[l];
    char pre[32], a1[48], at[48], pj[56];
    snprintf(pre, sizeof pre, "h%u", l);
    snprintf(a1, sizeof a1, "h%u.ln_1", l), snprintf(at, sizeof at, "h%u.attn", l);
    /* attention: dxm is the gradient of x_mid = x + dropout(a) */
    uint32_t da = dropout_bwd(n, dxm, at, (*key)--);
    uint32_t gwo = mat(n, VT_TC_GRAD, C, C, at, "c_proj.weight.grad"), gbo = vec(n, VT_TC_GRAD, C, at, "c_proj.bias.grad");
    uint32_t dom = mat(n, VT_TC_GRAD, BT, C, at, "merged.grad");
    snprintf(pj, sizeof pj, "%s.c_proj", at);
    lin_bwd(n, ly->om, ly->wo, da, gwo, gbo, dom, BT, C, C, pj);
    uint32_t doh = mat(n, VT_TC_GRAD, G * T, D, at, "weighted.grad");
    uint32_t dp = mat(n, VT_TC_GRAD, G * T, T, at, "probs.grad"), dv = mat(n, VT_TC_GRAD, G * T, D, at, "v.grad");
    uint32_t sdot = vec(n, VT_TC_GRAD, G * T, at, "probs.grad.dot"), ds = mat(n, VT_TC_GRAD, G * T, T, at, "scores.grad");
    uint32_t dq = mat(n, VT_TC_GRAD, G * T, D, at, "q.grad"), dk = mat(n, VT_TC_GRAD, G * T, D, at, "k.grad");
    uint32_t dqkv = mat(n, VT_TC_GRAD, BT, 3 * C, at, "qkv.grad");
    uint32_t gwq = mat(n, VT_TC_GRAD, C, 3 * C, at, "c_attn.weight.grad"), gbq = vec(n, VT_TC_GRAD, 3 * C, at, "c_attn.bias.grad");
    uint32_t dh1 = mat(n, VT_TC_GRAD, BT, C, a1, "out.grad");
    vt_prog_op(p, VT_OPK_HEADS_UNMERGE, ARR(dom), 1, ARR(doh), 1, IARG(B, T, n->H, D), 4, NULL, 0,
               "%s split the gradient into heads", at);
    vt_prog_op(p, VT_OPK_BMM, ARR(doh, ly->v), 2, ARR(dp), 1, IARG(G, T, T, D, 0, 1), 6, NULL, 0,
               "%s probabilities gradient", at);
    vt_prog_op(p, VT_OPK_BMM, ARR(ly->p, doh), 2, ARR(dv), 1, IARG(G, T, D, T, 1, 0), 6, NULL, 0, "%s v gradient",
               at);
    vt_prog_op(p, VT_OPK_ROW_DOT, ARR(ly->p, dp), 2, ARR(sdot), 1, NULL, 0, NULL, 0, "%s probabilities dot gradient",
               at);
    vt_prog_op(p, VT_OPK_SOFTMAX_BWD, ARR(ly->p, dp, sdot), 3, ARR(ds), 1, IARG(T), 1, FARG(1.0 / sqrt((double)D)),
               1, "%s softmax backward", at);
    vt_prog_op(p, VT_OPK_BMM, ARR(ds, ly->k), 2, ARR(dq), 1, IARG(G, T, D, T, 0, 0), 6, NULL, 0, "%s q gradient",
               at);
    vt_prog_op(p, VT_OPK_BMM, ARR(ds, ly->q), 2, ARR(dk), 1, IARG(G, T, D, T, 1, 0), 6, NULL, 0, "%s k gradient",
               at);
    vt_prog_op(p, VT_OPK_HEADS_JOIN, ARR(dq, dk, dv), 3, ARR(dqkv), 1, IARG(B, T, n->H, D), 4, NULL, 0,
               "%s join the heads' gradients", at);
    snprintf(pj, sizeof pj, "%s.c_attn", at);
    lin_bwd(n, ly->ln1.y, ly->wqkv, dqkv, gwq, gbq, dh1, BT, C, 3 * C, pj);
    set_grad(n, ly->wqkv, gwq), set_grad(n, ly->bqkv, gbq), set_grad(n, ly->wo, gwo), set_grad(n, ly->bo, gbo);
    return ln_residual_bwd(n, &ly->ln1, dh1, a1, dxm, pre, "in.grad", pre, "attention");
}

/* the embeddings' gradients from dx (the first block's input gradient); gte_head: lm_head's share of
 * wte's gradient when tied */
static void gpt_embed_backward(gpt *n, uint32_t dx, uint32_t key, uint32_t gte_head)
{
    GPT_DIMS;
    uint32_t dx0 = dropout_bwd(n, dx, "embedding", key);
    uint32_t gpe = mat(n, VT_TC_GRAD, T, C, "wpe", "weight.grad");
    uint32_t oh = mat(n, VT_TC_ACT, BT, V, "tokens", "onehot");
    uint32_t gte_emb = mat(n, VT_TC_GRAD, V, C, "wte", rcp->gpt_tie ? "embedding.grad" : "weight.grad");
    vt_prog_op(p, VT_OPK_POS_GRAD, ARR(dx0), 1, ARR(gpe), 1, IARG(B, T), 2, NULL, 0, "position embedding gradient");
    vt_prog_op(p, VT_OPK_ONEHOT, ARR(n->tok), 1, ARR(oh), 1, IARG(V), 1, NULL, 0, "tokens one-hot");
    vt_prog_op(p, VT_OPK_MATMUL, ARR(oh, dx0), 2, ARR(gte_emb), 1, IARG(1, 0, V, C, BT), 5, NULL, 0,
               "token embedding weight-gradient GEMM");
    set_grad(n, n->wpe, gpe);
    if (rcp->gpt_tie) {
        uint32_t gte = mat(n, VT_TC_GRAD, V, C, "wte", "weight.grad");
        vt_prog_op(p, VT_OPK_ADD, ARR(gte_emb, gte_head), 2, ARR(gte), 1, NULL, 0, NULL, 0,
                   "token embedding gradient (embedding + tied head)");
        set_grad(n, n->wte, gte);
    } else set_grad(n, n->wte, gte_emb);
}

vt_err vt_arch_gpt_build(const vt_recipe *rcp, vt_program *p)
{
    VT_RETURN_ERROR_IF(rcp->gpt_layers > MAXL, VT_ERR_ARG, "recipe: at most %d layers", MAXL);
    gpt *n = calloc(1, sizeof *n);
    VT_RETURN_ERROR_IF(!n, VT_ERR_NOMEM, "out of memory");
    n->p = p, n->rcp = rcp;
    n->B = rcp->batch, n->T = rcp->gpt_context, n->C = rcp->gpt_width, n->H = rcp->gpt_heads, n->D = n->C / n->H;
    n->V = rcp->gpt_vocab, n->L = rcp->gpt_layers, n->BT = n->B * n->T, n->drop = rcp->dropout > 0;
    const uint32_t B = n->B, T = n->T, V = n->V;

    /* the state: parameters, AdamW's moments (exp_avg of each, then exp_avg_sq of each) */
    gpt_params(n);
    uint32_t *m1 = calloc(2 * (size_t)n->np, sizeof *m1), *m2 = m1 ? m1 + n->np : NULL;
    if (!m1 || n->np >= MAXP) {
        free(m1), free(n);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory");
    }
    vt_arch_opt_tensors(p, rcp, n->np, n->params, m1, m2);
    gpt_tensors(n);
    if (p->bad) {
        free(m1), free(n);
        return vt_program_finish(p);
    }

    /* the step */
    vt_prog_op(p, VT_OPK_LOAD_WINDOWS, NULL, 0, ARR(n->tok, n->tgt), 2, IARG(B, T, (int64_t)rcp->seed, V), 4, NULL, 0,
               "load windows");
    vt_arch_schedule_op(p, rcp, n->tstep, n->lr);
    p->fwd_first = p->n_ops + 1;
    forward(n);
    p->fwd_last = p->n_ops;
    vt_prog_op(p, VT_OPK_XENT_LOSS, ARR(n->probs, n->tgt), 2, ARR(n->loss), 1, NULL, 0, NULL, 0, "cross-entropy loss");

    /* backward: the head, the blocks last to first, the embeddings */
    uint32_t gte_head;
    uint32_t dx = gpt_head_backward(n, &gte_head);
    uint32_t key = 1 + 2 * n->L;
    for (uint32_t l = n->L; l-- > 0;) dx = gpt_attn_backward(n, l, gpt_mlp_backward(n, l, dx, &key), &key);
    gpt_embed_backward(n, dx, key, gte_head);
    vt_arch_update_ops(p, rcp, n->np, n->params, n->grads, m1, m2, n->decay, n->tstep, n->lr);
    if (n->drop) { /* evaluation: the forward pass without dropout */
        vt_prog_eval_begin(p);
        n->eval = 1;
        forward(n);
        vt_prog_eval_end(p);
    }
    p->loss = n->loss, p->input = n->tok, p->labels = n->tgt, p->probs = n->probs;
    free(m1), free(n);
    return vt_program_finish(p);
}
