/* vt_model_eval.c - evaluation by the program's own forward pass (vt_model.h): accuracy and
 * predictions (the evaluation range, vt_program_eval_range), and a text model's loss and samples,
 * every value RN32 of its exact result. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/vt_math.h"
#include "../ops/vt_philox.h"
#include "vt_model.h"
#include "vt_model_int.h"

vt_err vt_program_evaluate(const vt_program *p, const vt_dataset *ds, size_t max_examples, vt_eval_fwd fwd,
                           vt_eval_prob prob, void *ctx, double *acc)
{
    return vt_program_evaluate_pred(p, ds, max_examples, fwd, prob, ctx, acc, NULL);
}

vt_err vt_program_evaluate_pred(const vt_program *p, const vt_dataset *ds, size_t max_examples, vt_eval_fwd fwd,
                                vt_eval_prob prob, void *ctx, double *acc, uint32_t *pred)
{
    const vt_tensor *x = &p->t[p->input], *pr = &p->t[p->probs];
    size_t n = ds->n < max_examples || !max_examples ? ds->n : max_examples, B = x->shape[0], C = pr->shape[1],
           correct = 0;
    VT_RETURN_ERROR_IF(x->rank != 2 || pr->rank != 2 || x->dtype != VT_DT_F32 || pr->dtype != VT_DT_F32 ||
                           pr->shape[0] != x->shape[0],
                       VT_ERR_INTERNAL, "evaluation: the program's input and probabilities are not [B, d] and [B, C] F32");
    VT_RETURN_ERROR_IF(ds->d != x->shape[1], VT_ERR_ARG, "the dataset does not fit the model");
    VT_RETURN_ERROR_IF(ds->yt, VT_ERR_ARG,
                       "the data set has float targets (a regression or multi-label model): accuracy is a classifier's "
                       "figure and is not computed; the run's loss per step is in its records (trainer report)");
    VT_RETURN_ERROR_IF(n == 0, VT_ERR_ARG, "no examples to evaluate");
    size_t *idx = malloc(B * sizeof *idx);
    VT_RETURN_ERROR_IF(!idx, VT_ERR_NOMEM, "out of memory");
    vt_err e = VT_OK;
    for (size_t i0 = 0; i0 < n && !e; i0 += B) {
        for (size_t k = 0; k < B; k++) idx[k] = i0 + k < n ? i0 + k : 0; /* the last batch padded */
        e = fwd(ctx, idx, B);
        for (size_t k = 0; k < B && !e && i0 + k < n; k++) {
            size_t best = 0;
            for (size_t c = 1; c < C; c++)
                if (prob(ctx, k * C + c) > prob(ctx, k * C + best)) best = c;
            correct += best == ds->y[i0 + k];
            if (pred) pred[i0 + k] = (uint32_t)best;
        }
    }
    free(idx);
    VT_FORWARD_IF_ERROR(e);
    *acc = (double)correct / (double)n;
    return VT_OK;
}

typedef struct {
    vt_model *m;
    const vt_dataset *ds;
    vt_rctx rctx;
    vt_steplog log;
    uint8_t *lab;
} eval_ctx;

static vt_err eval_fwd(void *ctx, const size_t *idx, size_t B)
{
    eval_ctx *c = ctx;
    const vt_program *p = &c->m->prog;
    vt_err e = vt_data_batch(c->ds, idx, B, vt_model_tensor(c->m, p->input, NULL), c->lab);
    if (!e) e = vt_rctx_begin_step(&c->rctx, 1, &c->log);
    uint32_t first, last;
    vt_program_eval_range(p, &first, &last);
    for (uint32_t j = first; j <= last && !e; j++) e = vti_model_op(c->m, c->ds, &c->rctx, 1, j);
    return e;
}

static double eval_prob(void *ctx, size_t i)
{
    eval_ctx *c = ctx;
    return ((const float *)vt_model_tensor(c->m, c->m->prog.probs, NULL))[i];
}

vt_err vt_model_accuracy(vt_model *m, const vt_dataset *ds, size_t max_examples, double *acc)
{
    return vt_model_predict(m, ds, max_examples, acc, NULL);
}

vt_err vt_model_predict(vt_model *m, const vt_dataset *ds, size_t max_examples, double *acc, uint32_t *pred)
{
    eval_ctx c;
    memset(&c, 0, sizeof c);
    c.m = m, c.ds = ds, c.lab = malloc(m->prog.t[m->prog.input].shape[0]); /* the batch vt_program_evaluate loads */
    VT_RETURN_ERROR_IF(!c.lab, VT_ERR_NOMEM, "out of memory");
    /* the forward pass of the step program, rounded to nearest with a log nobody reads */
    vt_bound_cfg bc = m->rcp.bound;
    bc.rounding = VT_ROUNDING_LOG;
    vt_steplog_init(&c.log, 0);
    vt_rctx_init(&c.rctx, VT_RMODE_RECORD, bc);
    vt_exec saved = m->exec;
    vt_exec_init(&m->exec, m->exec.order, bc, m->rcp.seed);
    vt_err e = vt_program_evaluate_pred(&m->prog, ds, max_examples, eval_fwd, eval_prob, &c, acc, pred);
    vt_exec_free(&m->exec);
    m->exec = saved;
    vt_steplog_free(&c.log);
    free(c.lab);
    return e;
}

/* ------------------------------------------------------------ text models */

/* The evaluation pass on the current tokens, every value RN32 of the exact result (the same bits
 * on every machine: the samples and losses below do not depend on who computes them). */
typedef struct {
    vt_rctx rctx;
    vt_steplog log;
    vt_exec saved;
} text_eval;

static void text_eval_begin(vt_model *m, text_eval *t)
{
    vt_bound_cfg bc = m->rcp.bound;
    bc.rounding = VT_ROUNDING_EXACT;
    bc.mode = VT_BOUND_PROVABLE;
    vt_steplog_init(&t->log, 0);
    vt_rctx_init(&t->rctx, VT_RMODE_RECORD, bc);
    t->saved = m->exec;
    vt_exec_init(&m->exec, m->exec.order, bc, m->rcp.seed);
}

static vt_err text_eval_run(vt_model *m, const vt_dataset *ds, text_eval *t)
{
    uint32_t first, last;
    vt_program_eval_range(&m->prog, &first, &last);
    vt_err e = vt_rctx_begin_step(&t->rctx, 1, &t->log);
    for (uint32_t j = first; j <= last && !e; j++) e = vti_model_op(m, ds, &t->rctx, 1, j);
    return e;
}

static void text_eval_end(vt_model *m, text_eval *t)
{
    vt_exec_free(&m->exec);
    m->exec = t->saved;
    vt_steplog_free(&t->log);
}

static vt_err text_shapes(const vt_model *m, size_t *B, size_t *T, size_t *V)
{
    const vt_program *p = &m->prog;
    const vt_tensor *x = &p->t[p->input], *pr = &p->t[p->probs];
    VT_RETURN_ERROR_IF(x->dtype != VT_DT_U8 || x->rank != 2 || pr->rank != 2 || pr->shape[0] != x->n, VT_ERR_ARG,
                       "the model is not a text model");
    *B = x->shape[0], *T = x->shape[1], *V = pr->shape[1];
    return VT_OK;
}

vt_err vt_model_text_loss(vt_model *m, const vt_dataset *ds, size_t max_windows, double *nats, size_t *positions)
{
    return vt_model_text_predict(m, ds, max_windows, nats, positions, NULL);
}

vt_err vt_model_text_predict(vt_model *m, const vt_dataset *ds, size_t max_windows, double *nats, size_t *positions,
                             uint32_t *pred)
{
    size_t B = 0, T = 0, V = 0;
    VT_FORWARD_IF_ERROR(text_shapes(m, &B, &T, &V));
    VT_RETURN_ERROR_IF(!ds->text || ds->n < T + 1, VT_ERR_ARG, "%s is not a text of more than %zu tokens", ds->name, T);
    VT_RETURN_ERROR_IF(ds->n_classes > V, VT_ERR_ARG, "%s has %u tokens in its vocabulary, the model %zu", ds->name,
                       ds->n_classes, V);
    size_t nw = (ds->n - 1) / T;
    if (max_windows && max_windows < nw) nw = max_windows;
    uint8_t *tok = vt_model_tensor(m, m->prog.input, NULL);
    const float *pr = vt_model_tensor(m, m->prog.probs, NULL);
    text_eval t;
    text_eval_begin(m, &t);
    double sum = 0;
    size_t cnt = 0;
    vt_err e = VT_OK;
    for (size_t w0 = 0; w0 < nw && !e; w0 += B) {
        for (size_t b = 0; b < B; b++) { /* window w0 + b: tokens [wT, wT + T), targets one later */
            size_t w = w0 + b < nw ? w0 + b : w0;
            memcpy(tok + b * T, ds->x + w * T, T);
        }
        e = text_eval_run(m, ds, &t);
        for (size_t b = 0; b < B && !e && w0 + b < nw; b++)
            for (size_t k = 0; k < T; k++) {
                const float *row = pr + (b * T + k) * V;
                double q = row[ds->x[(w0 + b) * T + k + 1]];
                sum += -vt_log(q > 0x1p-149 ? q : 0x1p-149);
                cnt++;
                if (pred) {
                    uint32_t best = 0;
                    for (uint32_t v = 1; v < V; v++)
                        if (row[v] > row[best]) best = v;
                    pred[(w0 + b) * T + k] = best;
                }
            }
    }
    text_eval_end(m, &t);
    VT_FORWARD_IF_ERROR(e);
    *nats = sum / (double)cnt;
    if (positions) *positions = cnt;
    return VT_OK;
}

vt_err vt_model_sample(vt_model *m, uint64_t seed, const uint8_t *prompt, size_t np, size_t n, uint8_t *out)
{
    size_t B = 0, T = 0, V = 0;
    VT_FORWARD_IF_ERROR(text_shapes(m, &B, &T, &V));
    VT_RETURN_ERROR_IF(np == 0 || n > SIZE_MAX - np, VT_ERR_ARG, "sampling needs a prompt of at least one token");
    for (size_t i = 0; i < np; i++)
        VT_RETURN_ERROR_IF(prompt[i] >= V, VT_ERR_ARG, "prompt token %u is not in the vocabulary", prompt[i]);
    uint8_t *ctx = malloc(np + n);
    VT_RETURN_ERROR_IF(!ctx, VT_ERR_NOMEM, "out of memory");
    memcpy(ctx, prompt, np);
    uint8_t *tok = vt_model_tensor(m, m->prog.input, NULL);
    const float *pr = vt_model_tensor(m, m->prog.probs, NULL);
    text_eval t;
    text_eval_begin(m, &t);
    vt_err e = VT_OK;
    size_t len = np;
    for (size_t i = 0; i < n && !e; i++) {
        size_t c0 = len > T ? len - T : 0, cl = len - c0; /* the last (at most T) tokens, left-aligned */
        memset(tok, 0, B * T);
        memcpy(tok, ctx + c0, cl);
        e = text_eval_run(m, NULL, &t);
        if (e) break;
        /* inverse CDF of the next token's distribution at a 24-bit uniform draw (seed, purpose 6, i) */
        double u = vt_rand_unit(seed, 6, 0, i), acc = 0;
        const float *q = pr + (cl - 1) * V;
        size_t k = 0;
        for (; k + 1 < V; k++) {
            acc += q[k];
            if (u < acc) break;
        }
        ctx[len++] = (uint8_t)k;
        out[i] = (uint8_t)k;
    }
    text_eval_end(m, &t);
    free(ctx);
    return e;
}
