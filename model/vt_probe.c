/* vt_probe.c - the known-answer probe of the operation kinds (vt_probe.h). */
#include "vt_probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../arch/vt_graph.h"
#include "vt_model_int.h"

/* the synthetic data's constant seed and the probe's sizes */
#define PROBE_SEED 0x7670726f62653031ull /* "vtprobe01" */
#define IMG_C 3u
#define IMG_H 8u
#define IMG_W 8u
#define IMG_N 8u
#define TXT_N 64u
#define TXT_VOCAB 16u
#define SUB_N 64u
#define LOSS_N 8u /* the losses' program: examples, values per example, batch */
#define LOSS_K 3u
#define LOSS_B 4u
#define LAY_B 2u /* the layouts' program: examples, pixels, channels */
#define LAY_HW 6u
#define LAY_C 3u

/* the recipes of the probe's programs: "key=value" settings over the default recipe (the MLP) */
#define IMG_KEYS "dataset=probe-images", "layers=[192,10]", "batch=4", "steps=2", "seed=3"
#define CNN_KEYS                                                                                                       \
    IMG_KEYS, "arch=resnet", "image_channels=3", "image_height=8", "image_width=8", "augment_pad=1",                   \
        "augment_flip=1", "resnet_width=4", "resnet_stages=2", "resnet_blocks=1", "resnet_pool=1", "momentum=0.9",    \
        "weight_decay=0.0005", "schedule=step", "decay_every=1"
static const char *const MLP_SGD[] = {IMG_KEYS, "layers=[192,8,10]", "momentum=0.9", NULL};
static const char *const MLP_ADAM[] = {IMG_KEYS, "layers=[192,8,6,10]", "optimizer=adam", "lr=0.002", NULL};
static const char *const CNN_V1[] = {CNN_KEYS, NULL};
static const char *const CNN_V2[] = {CNN_KEYS, "program_version=2", NULL};
static const char *const GPT[] = {"arch=gpt", "dataset=probe-text", "gpt_layers=1", "gpt_heads=2", "gpt_width=16",
                                  "gpt_context=8", "gpt_vocab=16", "gpt_tie=1", "dropout=0.1", "clip_norm=1.0",
                                  "batch=2", "steps=2", "seed=5", "optimizer=adamw", "lr=0.003", "beta1=0.9",
                                  "beta2=0.99", "weight_decay=0.1", "schedule=cosine", "warmup=1",
                                  "final_lr_factor=0.1", NULL};

static uint64_t mix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The fixed image set (IMG_N examples of 3 x 8 x 8 bytes, classes i mod 10) and text (TXT_N tokens
 * of a vocabulary of TXT_VOCAB), in memory. */
typedef struct {
    uint8_t x[IMG_N * IMG_C * IMG_H * IMG_W], y[IMG_N], tok[TXT_N];
    vt_dataset img, txt;
} probe_data;

static void make_data(probe_data *d)
{
    uint64_t s = PROBE_SEED;
    for (size_t i = 0; i < sizeof d->x; i++) d->x[i] = (uint8_t)mix64(&s);
    for (uint32_t i = 0; i < IMG_N; i++) d->y[i] = (uint8_t)(i % 10);
    for (uint32_t i = 0; i < TXT_N; i++) d->tok[i] = (uint8_t)(mix64(&s) % TXT_VOCAB);
    vt_dataset *g = &d->img;
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "probe-images");
    g->n = IMG_N, g->d = IMG_C * IMG_H * IMG_W, g->channels = IMG_C, g->rows = IMG_H, g->cols = IMG_W;
    g->n_classes = 10, g->x_max = 255, g->x = d->x, g->y = d->y;
    for (unsigned v = 0; v < 256; v++) g->lut[v] = (float)((double)v / 255.0);
    vt_dataset *t = &d->txt;
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "probe-text");
    t->n = TXT_N, t->d = 1, t->channels = t->rows = t->cols = 1, t->n_classes = TXT_VOCAB, t->text = 1;
    t->x = t->y = d->tok;
    for (unsigned v = 0; v < TXT_VOCAB; v++) t->chars[v] = (uint8_t)('a' + v);
}

static const char *const PROGRAMS[] = {"mlp sgd", "mlp adam", "resnet", "resnet program 2", "gpt", "sub"};
#define N_PROGRAMS (sizeof PROGRAMS / sizeof PROGRAMS[0])

/* after these, the MLP with SGD in each tensor-core arithmetic model (vt_gemm_arith_names[1 ..]) */
const char *vt_probe_program_name(uint8_t prog)
{
    if (prog < N_PROGRAMS) return PROGRAMS[prog];
    size_t v = 1;
    for (; vt_gemm_arith_names[v]; v++)
        if (v == (size_t)prog - N_PROGRAMS + 1) return vt_gemm_arith_names[v];
    if ((size_t)prog == N_PROGRAMS + v - 1) return "losses"; /* after the tensor-core models */
    if ((size_t)prog == N_PROGRAMS + v) return "layouts";
    if ((size_t)prog == N_PROGRAMS + v + 1) return "transformer";
    return "?";
}

/* what the hook is given: the probe, and the program running */
typedef struct {
    vt_probe *p;
    uint8_t prog;
} probe_ctx;

/* after each probed operation: its output hash recorded and chained into its kind's */
static vt_err chain(void *ctx, vt_model *m, uint64_t step, uint32_t op)
{
    (void)step;
    probe_ctx *c = ctx;
    vt_probe *p = c->p;
    if (p->n_seq == p->cap_seq) {
        size_t cap = 2 * p->cap_seq + 256;
        vt_probe_op *q = realloc(p->seq, cap * sizeof *q);
        VT_RETURN_ERROR_IF(!q, VT_ERR_NOMEM, "the known-answer probe: out of memory");
        p->seq = q, p->cap_seq = cap;
    }
    vt_probe_op *r = &p->seq[p->n_seq];
    memset(r, 0, sizeof *r); /* its padding too: records compare as bytes */
    r->prog = c->prog, r->kind = m->prog.op[op].kind, r->op = op;
    VT_FORWARD_IF_ERROR(vti_model_output_hash(m, op, r->h));
    p->n_seq++;
    uint8_t buf[2 * VT_HASH_LEN];
    memcpy(buf, p->kind[r->kind], VT_HASH_LEN);
    memcpy(buf + VT_HASH_LEN, r->h, VT_HASH_LEN);
    p->ops[r->kind]++;
    return vt_sha256(buf, sizeof buf, p->kind[r->kind]);
}

/* One step of the recipe `keys` (and `extra`, NULL: none; keys NULL: the probe's transformer) on ds, then
 * its evaluation pass (when the program has one). */
static vt_err probe_recipe(uint8_t prog, const char *const *keys, const char *extra, const vt_dataset *ds,
                           vt_order order, vt_op_hook tamper, void *tctx, vt_probe *p)
{
    vt_recipe rcp;
    vt_recipe_default(&rcp);
    if (!keys) VT_FORWARD_IF_ERROR(vt_probe_transformer_recipe(&rcp));
    for (int i = 0; keys && keys[i]; i++) VT_FORWARD_IF_ERROR(vt_recipe_set(&rcp, keys[i]));
    if (extra) VT_FORWARD_IF_ERROR(vt_recipe_set(&rcp, extra));
    vt_model m;
    memset(&m, 0, sizeof m);
    VT_FORWARD_IF_ERROR(vt_model_init_within(&m, &rcp, ds->n, order, UINT64_MAX));
    m.tamper = tamper, m.tamper_ctx = tctx;
    vt_steplog log;
    vt_steplog_init(&log, 0);
    vt_rctx rx;
    vt_rctx_init(&rx, VT_RMODE_RECORD, m.rcp.bound);
    vt_err e = vt_rctx_begin_step(&rx, 1, &log);
    probe_ctx c = {p, prog};
    if (!e) e = vt_model_run(&m, ds, &rx, m.prog.n_ops, chain, &c);
    if (!e) e = vt_rctx_end_step(&rx);
    for (uint32_t j = m.prog.n_ops + 1; j <= m.prog.n_ops + m.prog.n_eval && !e; j++) {
        e = vti_model_exec(&m, ds, &rx, 1, j);
        if (!e) e = chain(&c, &m, 1, j);
    }
    vt_steplog_free(&log);
    vt_model_free(&m);
    return e ? vt_error_prefix(e, "the known-answer probe (%s)", vt_probe_program_name(prog)) : VT_OK;
}

/* Steps 1 .. steps of a hand-built program (m: its program and arenas) in the given rounding, after(actx,
 * ...) called after every operation (tamper, the model's hook, before it) */
static vt_err hand_built_steps(vt_model *m, const vt_dataset *ds, uint64_t steps, vt_rounding rounding,
                               vt_op_hook tamper, void *tctx, vt_op_hook after, void *actx)
{
    m->tamper = tamper, m->tamper_ctx = tctx;
    vt_steplog log;
    vt_steplog_init(&log, 0);
    vt_rctx rx;
    vt_rctx_init(&rx, VT_RMODE_RECORD, (vt_bound_cfg){.mode = VT_BOUND_PROVABLE, .rounding = rounding});
    vt_err e = VT_OK;
    for (uint64_t st = 1; st <= steps && !e; st++) {
        e = vt_rctx_begin_step(&rx, st, &log);
        for (uint32_t j = 1; j <= m->prog.n_ops && !e; j++) {
            e = vti_model_exec(m, ds, &rx, st, j);
            if (!e && after) e = after(actx, m, st, j);
        }
        if (!e) e = vt_rctx_end_step(&rx);
    }
    vt_steplog_free(&log);
    return e;
}

/* The kinds no architecture uses, in a hand-built program: y = a - b over SUB_N elements (a tie, a
 * value just past one, subnormals, a difference that rounds to FLT_MAX, a zero, then values drawn
 * from the seed), each tensor alone in its class's arena, as tests/unit/test_kinds.c's extra program. */
static vt_err probe_extra(uint8_t prog, vt_op_hook tamper, void *tctx, vt_probe *p)
{
    float a[SUB_N], b[SUB_N], y[SUB_N];
    double x64[SUB_N];
    uint64_t s = PROBE_SEED ^ 1;
    for (size_t i = 0; i < SUB_N; i++) {
        a[i] = (float)((double)(int32_t)(uint32_t)mix64(&s) * 0x1p-24);
        b[i] = (float)((double)(int32_t)(uint32_t)mix64(&s) * 0x1p-40);
    }
    a[0] = 1.0f, b[0] = 0x1p-25f;
    a[1] = 1.0f, b[1] = 0x1.8p-25f;
    a[2] = 0x1p-149f, b[2] = -0x1p-149f;
    a[3] = 0x1.fffffep127f, b[3] = -0x1p102f;
    a[4] = 3.0f, b[4] = 3.0f;
    vt_model *m = calloc(1, sizeof *m);
    VT_RETURN_ERROR_IF(!m, VT_ERR_NOMEM, "the known-answer probe: out of memory");
    vt_program *g = &m->prog;
    vt_program_init(g);
    const uint32_t shape[1] = {SUB_N};
    const uint32_t in[2] = {vt_prog_tensor(g, VT_TC_INPUT, VT_DT_F32, 1, shape, "a"),
                            vt_prog_tensor(g, VT_TC_ACT, VT_DT_F32, 1, shape, "b")};
    const uint32_t out[1] = {vt_prog_tensor(g, VT_TC_GRAD, VT_DT_F32, 1, shape, "y")};
    uint32_t op = vt_prog_op(g, VT_OPK_SUB, in, 2, out, 1, NULL, 0, NULL, 0, "a - b");
    vt_err e = op == 1 && !g->bad ? vt_op_check(g, &g->op[1])
                                  : vt_set_error(VT_ERR_NOMEM, "the known-answer probe: out of memory");
    m->arena[VT_TC_INPUT] = (uint8_t *)a, m->arena[VT_TC_ACT] = (uint8_t *)b, m->arena[VT_TC_GRAD] = (uint8_t *)y;
    m->x64 = x64, m->n_ops = 1;
    probe_ctx c = {p, prog};
    if (!e) e = hand_built_steps(m, NULL, 1, VT_ROUNDING_EXACT, tamper, tctx, chain, &c);
    vt_program_free(g);
    free(m);
    return e;
}

/* The losses' program (vt_probe.h): targets loaded, each loss and its gradient of the loaded
 * values against them */
vt_err vt_probe_losses_program(vt_program *g, uint32_t B, uint32_t K)
{
    vt_program_init(g);
    const uint32_t shape[2] = {B, K};
    const uint32_t xt[2] = {vt_prog_tensor(g, VT_TC_INPUT, VT_DT_F32, 2, shape, "x"),
                            vt_prog_tensor(g, VT_TC_INPUT, VT_DT_F32, 2, shape, "t")};
    const int64_t b = B;
    vt_prog_op(g, VT_OPK_LOAD_BATCH_TARGETS, NULL, 0, xt, 2, &b, 1, NULL, 0, "load batch and targets");
    static const struct {
        uint16_t loss, bwd;
        const char *name;
    } L[] = {{VT_OPK_MSE_LOSS, VT_OPK_MSE_BWD, "mse"},
             {VT_OPK_L1_LOSS, VT_OPK_L1_BWD, "l1"},
             {VT_OPK_BCE_LOSS, VT_OPK_BCE_BWD, "bce"}};
    const uint32_t one[1] = {1};
    g->input = xt[0], g->labels = g->probs = xt[1], g->fwd_first = g->fwd_last = 1;
    for (size_t k = 0; k < sizeof L / sizeof L[0]; k++) {
        const uint32_t l = vt_prog_tensor(g, VT_TC_ACT, VT_DT_F32, 1, one, "%s.loss", L[k].name);
        if (k == 0) g->loss = l;
        const uint32_t d = vt_prog_tensor(g, VT_TC_GRAD, VT_DT_F32, 2, shape, "%s.grad", L[k].name);
        vt_prog_op(g, L[k].loss, xt, 2, &l, 1, NULL, 0, NULL, 0, "%s loss", L[k].name);
        vt_prog_op(g, L[k].bwd, xt, 2, &d, 1, NULL, 0, NULL, 0, "%s backward", L[k].name);
    }
    /* the activations of client models on the loaded values, the targets standing for dY: sigmoid and
     * tanh and their backward kinds (from their outputs), leaky ReLU (alpha 0.2) and GELU (erf form)
     * and their backward kinds (from their inputs) */
    static const struct {
        uint16_t fwd, bwd;
        const char *name;
    } A[] = {{VT_OPK_SIGMOID, VT_OPK_SIGMOID_BWD, "sigmoid"},
             {VT_OPK_TANH, VT_OPK_TANH_BWD, "tanh"},
             {VT_OPK_LEAKY_RELU, VT_OPK_LEAKY_RELU_BWD, "leaky_relu"},
             {VT_OPK_GELU_ERF, VT_OPK_GELU_ERF_BWD, "gelu_erf"}};
    const double alpha = 0.2;
    for (size_t k = 0; k < sizeof A / sizeof A[0]; k++) {
        const int lr = A[k].fwd == VT_OPK_LEAKY_RELU, from_x = lr || A[k].fwd == VT_OPK_GELU_ERF;
        const uint32_t y = vt_prog_tensor(g, VT_TC_ACT, VT_DT_F32, 2, shape, "%s.out", A[k].name);
        const uint32_t d = vt_prog_tensor(g, VT_TC_GRAD, VT_DT_F32, 2, shape, "%s.grad", A[k].name);
        vt_prog_op(g, A[k].fwd, xt, 1, &y, 1, NULL, 0, &alpha, lr ? 1 : 0, "%s", A[k].name);
        vt_prog_op(g, A[k].bwd, (const uint32_t[]){from_x ? xt[0] : y, xt[1]}, 2, &d, 1, NULL, 0, &alpha, lr ? 1 : 0,
                   "%s backward", A[k].name);
    }
    if (g->bad) return vt_set_error(VT_ERR_NOMEM, "the losses' program: out of memory");
    return vt_program_finish(g);
}

vt_err vt_probe_losses_run(uint32_t n, uint32_t K, uint32_t B, uint64_t seed, uint64_t steps, vt_rounding rounding,
                           vt_op_hook tamper, void *tctx, vt_op_hook after, void *actx)
{
    VT_RETURN_ERROR_IF(n < 2 || K < 1 || B < 1 || B > n || (uint64_t)n * K > ((uint64_t)1 << 24), VT_ERR_ARG,
                       "the losses' program: %u examples of %u values in batches of %u", n, K, B);
    const size_t nk = (size_t)n * K;
    float *x = malloc(nk * sizeof *x), *t = malloc(nk * sizeof *t);
    uint8_t *y = calloc(n, 1);
    size_t *idx = malloc(B * sizeof *idx);
    uint32_t *perm = malloc(n * sizeof *perm);
    double *x64 = malloc((size_t)B * K * sizeof *x64);
    vt_model *m = calloc(1, sizeof *m);
    vt_err e = x && t && y && idx && perm && x64 && m ? VT_OK : vt_set_error(VT_ERR_NOMEM, "the losses' program: out of memory");
    uint64_t s = seed;
    for (size_t i = 0; i < nk && !e; i++) { /* logits of a few units, targets in [0, 1) */
        x[i] = (float)((double)(int32_t)(uint32_t)mix64(&s) * 0x1p-28);
        t[i] = (float)((double)(mix64(&s) >> 40) * 0x1p-24);
    }
    if (!e) { /* a large logit either way, each with the target that makes its loss tiny; a value equal to its target */
        x[0] = 40.0f, t[0] = 1.0f;
        x[1] = nk > 1 ? -40.0f : x[1], t[1] = nk > 1 ? 0.0f : t[1];
        if (nk > 2) x[2] = 0.25f, t[2] = 0.25f;
    }
    vt_dataset ds;
    memset(&ds, 0, sizeof ds);
    snprintf(ds.name, sizeof ds.name, "probe-targets");
    ds.n = n, ds.d = K, ds.channels = ds.rows = 1, ds.cols = K;
    ds.xf = x, ds.y = y, ds.yt = t, ds.k_targets = K, ds.hash_version = 3;
    vt_program *g = m ? &m->prog : NULL;
    if (!e) e = vt_probe_losses_program(g, B, K);
    for (int c = 0; c < VT_TC_COUNT && !e; c++) {
        m->arena[c] = calloc(g->arena_bytes[c] ? g->arena_bytes[c] : 1, 1);
        if (!m->arena[c]) e = vt_set_error(VT_ERR_NOMEM, "the losses' program: out of memory");
    }
    if (!e) {
        m->x64 = x64, m->n_ops = g->n_ops;
        m->batch_idx = idx, m->perm = perm, m->n_examples = n, m->rcp.batch = B, m->rcp.seed = 7;
        e = hand_built_steps(m, &ds, steps, rounding, tamper, tctx, after, actx);
    }
    if (m) {
        vt_program_free(g);
        for (int k = 0; k < VT_TC_COUNT; k++) free(m->arena[k]);
    }
    free(m), free(x), free(t), free(y), free(idx), free(perm), free(x64);
    return e;
}

/* The probe's step of the losses' program: LOSS_N examples of LOSS_K, batches of LOSS_B */
static vt_err probe_losses(uint8_t prog, vt_op_hook tamper, void *tctx, vt_probe *p)
{
    probe_ctx c = {p, prog};
    vt_err e = vt_probe_losses_run(LOSS_N, LOSS_K, LOSS_B, PROBE_SEED ^ 2, 1, VT_ROUNDING_EXACT, tamper, tctx, chain, &c);
    return e ? vt_error_prefix(e, "the known-answer probe (losses)") : VT_OK;
}

vt_err vt_probe_layouts_program(vt_program *g, uint32_t B, uint32_t HW, uint32_t C)
{
    vt_program_init(g);
    const int64_t a[3] = {B, HW, C};
    const uint32_t one[1] = {1}; /* the program's loss: a state scalar no operation writes */
    g->loss = vt_prog_tensor(g, VT_TC_PARAM, VT_DT_F32, 1, one, "loss");
    const uint32_t x = vt_prog_tensor(g, VT_TC_PARAM, VT_DT_F32, 2, (const uint32_t[]){B, C * HW}, "x");
    const uint32_t y = vt_prog_tensor(g, VT_TC_ACT, VT_DT_F32, 2, (const uint32_t[]){B * HW, C}, "y");
    const uint32_t z = vt_prog_tensor(g, VT_TC_GRAD, VT_DT_F32, 2, (const uint32_t[]){B, C * HW}, "z");
    vt_prog_op(g, VT_OPK_NCHW_TO_NHWC, &x, 1, &y, 1, a, 3, NULL, 0, "to channels-last");
    vt_prog_op(g, VT_OPK_NHWC_TO_NCHW, &y, 1, &z, 1, a, 3, NULL, 0, "to channels-first");
    g->input = x, g->fwd_first = 1, g->fwd_last = 2; /* x: a state tensor (no loader writes it) */
    if (g->bad) return vt_set_error(VT_ERR_NOMEM, "the layouts' program: out of memory");
    return vt_program_finish(g);
}

/* The probe's step of the layouts' program: values drawn from the seed, a -0 and a subnormal among
 * them (moved, never computed) */
static vt_err probe_layouts(uint8_t prog, vt_op_hook tamper, void *tctx, vt_probe *p)
{
    vt_model *m = calloc(1, sizeof *m);
    VT_RETURN_ERROR_IF(!m, VT_ERR_NOMEM, "the known-answer probe: out of memory");
    vt_program *g = &m->prog;
    vt_err e = vt_probe_layouts_program(g, LAY_B, LAY_HW, LAY_C);
    for (int c = 0; c < VT_TC_COUNT && !e; c++) {
        m->arena[c] = calloc(g->arena_bytes[c] ? g->arena_bytes[c] : 1, 1);
        if (!m->arena[c]) e = vt_set_error(VT_ERR_NOMEM, "the layouts' program: out of memory");
    }
    double x64[LAY_B * LAY_HW * LAY_C];
    if (!e) {
        float *x = (float *)(m->arena[VT_TC_PARAM] + g->t[g->input].off);
        uint64_t s = PROBE_SEED ^ 3;
        for (size_t i = 0; i < LAY_B * LAY_HW * LAY_C; i++)
            x[i] = (float)((double)(int32_t)(uint32_t)mix64(&s) * 0x1p-28);
        x[1] = -0.0f, x[2] = 0x1p-149f;
        m->x64 = x64, m->n_ops = g->n_ops;
        probe_ctx c = {p, prog};
        e = hand_built_steps(m, NULL, 1, VT_ROUNDING_EXACT, tamper, tctx, chain, &c);
    }
    vt_program_free(g);
    for (int k = 0; k < VT_TC_COUNT; k++) free(m->arena[k]);
    free(m);
    return e ? vt_error_prefix(e, "the known-answer probe (layouts)") : VT_OK;
}

/* The client's transformer of the probe (vt_probe.h): the probe's images as 16 patches (a 2 x 2 convolution
 * of stride 2 to 8 channels, read as a sequence), a layer norm, q|k|v, attention of 2 heads of 4 over the
 * whole sequence, the residual, GELU, the mean over the rows, a classifier; SGD with momentum */
vt_err vt_probe_transformer_recipe(vt_recipe *r)
{
    static const char *const keys[] = {IMG_KEYS, "momentum=0.9", NULL};
    vt_recipe_default(r);
    for (int i = 0; keys[i]; i++) VT_FORWARD_IF_ERROR(vt_recipe_set(r, keys[i]));
    vt_graph g;
    vt_graph_init(&g);
    int bad = 0;
#define P(nm, rank, init, fan, ...) vt_graph_param(&g, nm, rank, (const uint32_t[]){__VA_ARGS__}, init, fan, &bad)
#define A8(...) ((const int64_t[VT_GLAYER_ATTRS]){__VA_ARGS__})
    const uint32_t pw = P("patch.weight", 4, VT_INIT_HE_UNIFORM, 12, 8, 3, 2, 2), pb = P("patch.bias", 1, VT_INIT_ZERO, 0, 8);
    const uint32_t lw = P("ln.weight", 1, VT_INIT_ONE, 0, 8), lb = P("ln.bias", 1, VT_INIT_ZERO, 0, 8);
    const uint32_t qw = P("qkv.weight", 2, VT_INIT_HE_UNIFORM, 8, 24, 8), qb = P("qkv.bias", 1, VT_INIT_ZERO, 0, 24);
    const uint32_t fw = P("fc.weight", 2, VT_INIT_HE_UNIFORM, 8, 10, 8), fb = P("fc.bias", 1, VT_INIT_ZERO, 0, 10);
    const uint32_t pos = P("pos", 3, VT_INIT_HE_UNIFORM, 8, 1, 16, 8);
    uint32_t v = 0, t;
    v = vt_graph_layer(&g, VT_GL_CONV, "patch", 1, &v, 2, (const uint32_t[]){pw, pb}, A8(8, 8, 3, 2, 2, 0, 1, 8), 128,
                       &bad);
    v = vt_graph_layer(&g, VT_GL_RESHAPE, "tokens", 1, &v, 0, NULL, A8(16), 128, &bad);
    t = v = vt_graph_layer(&g, VT_GL_POSITIONS, "positions", 1, &v, 1, &pos, A8(16, 8), 128, &bad);
    v = vt_graph_layer(&g, VT_GL_LAYERNORM, "ln", 1, &v, 2, (const uint32_t[]){lw, lb},
                       A8(vt_graph_f64_bits(1e-5), 8, 16), 128, &bad);
    v = vt_graph_layer(&g, VT_GL_LINEAR, "qkv", 1, &v, 2, (const uint32_t[]){qw, qb}, A8(1, 16), 384, &bad);
    v = vt_graph_layer(&g, VT_GL_ATTENTION, "attn", 1, &v, 0, NULL, A8(16, 2, 4, 0, vt_graph_f64_bits(0.5)), 128, &bad);
    v = vt_graph_layer(&g, VT_GL_ADD, "residual", 2, (const uint32_t[]){t, v}, 0, NULL, NULL, 128, &bad);
    v = vt_graph_layer(&g, VT_GL_GELU, "gelu", 1, &v, 0, NULL, A8(1), 128, &bad); /* the erf form */
    v = vt_graph_layer(&g, VT_GL_AVGPOOL, "pool", 1, &v, 0, NULL, A8(16, 1, 8), 8, &bad);
    v = vt_graph_layer(&g, VT_GL_LINEAR, "fc", 1, &v, 2, (const uint32_t[]){fw, fb}, A8(1), 10, &bad);
#undef A8
#undef P
    g.in_cols = 192, g.out = v, g.loss = VT_GLOSS_XENT;
    static const uint8_t no_file[32] = {0};
    vt_err e = bad ? vt_set_error(VT_ERR_NOMEM, "the probe's transformer: out of memory") : vt_recipe_set_graph(r, &g, no_file);
    vt_graph_free(&g);
    return e;
}

void vt_probe_free(vt_probe *p)
{
    free(p->seq);
    p->seq = NULL;
    p->n_seq = p->cap_seq = 0;
}

vt_err vt_probe_run(vt_order order, vt_op_hook tamper, void *tamper_ctx, vt_probe *out)
{
    memset(out, 0, sizeof *out);
    probe_data *d = malloc(sizeof *d);
    VT_RETURN_ERROR_IF(!d, VT_ERR_NOMEM, "the known-answer probe: out of memory");
    make_data(d);
    static const struct {
        const char *const *keys;
        int text;
    } R[] = {{MLP_SGD, 0}, {MLP_ADAM, 0}, {CNN_V1, 0}, {CNN_V2, 0}, {GPT, 1}}; /* PROGRAMS' order */
    vt_err e = VT_OK;
    uint8_t i = 0;
    for (; i < sizeof R / sizeof R[0] && !e; i++)
        e = probe_recipe(i, R[i].keys, NULL, R[i].text ? &d->txt : &d->img, order, tamper, tamper_ctx, out);
    if (!e) e = probe_extra(i, tamper, tamper_ctx, out);
    for (size_t v = 1; vt_gemm_arith_names[v] && !e; v++) { /* the GEMMs of each tensor-core model */
        char key[64];
        snprintf(key, sizeof key, "gemm_arith=%s", vt_gemm_arith_names[v]);
        e = probe_recipe((uint8_t)(N_PROGRAMS - 1 + v), MLP_SGD, key, &d->img, order, tamper, tamper_ctx, out);
    }
    size_t v = 1;
    while (vt_gemm_arith_names[v]) v++;
    if (!e) e = probe_losses((uint8_t)(N_PROGRAMS - 1 + v), tamper, tamper_ctx, out);
    if (!e) e = probe_layouts((uint8_t)(N_PROGRAMS + v), tamper, tamper_ctx, out);
    if (!e) e = probe_recipe((uint8_t)(N_PROGRAMS + v + 1), NULL, NULL, &d->img, order, tamper, tamper_ctx, out);
    free(d);
    VT_FORWARD_IF_ERROR(e);
    for (uint16_t k = 1; k < VT_OPK_COUNT; k++)
        VT_RETURN_ERROR_IF(!out->ops[k], VT_ERR_INTERNAL,
                           "the known-answer probe runs no operation of kind %s: add it to a program of "
                           "model/vt_probe.c",
                           vt_opkind_get(k)->name);
    return VT_OK;
}
