/* test_kat - known answers of the MLP step, pinned before the step becomes a general program
 * (issue "one step program for any model"): the per-operation output hashes of a few steps, the
 * loss and the state hash of every step, of a short UCI-digits run (Adam, three layers) and a short
 * MNIST run (the default recipe, SGD with momentum), in exact rounding - and the same MNIST run in
 * log rounding, whose stored values are RN32 of the exact value as well (docs/rounding.md 5), so it
 * must give the very same hashes.
 *
 * Exact rounding makes these values a function of the recipe and the data alone, so the answers
 * hold on every machine, BLAS and order; the test runs each configuration in two orders (blas and
 * pairwise). The answers live in tests/kat/mlp.kat ("name kind step [tensor] hex" lines: the loss and the state hash of
 * each step, and the SHA-256 of every tensor each operation of a pinned step writes, by tensor name); they were
 * written by this test (`test_kat --write tests/kat/mlp.kat`) on the MLP step before it became a program
 * (commit 39df846, its slots named as the program names its tensors), and change only with a deliberate,
 * documented change of what the step computes. The mnist-adam-subnormal answers (issue 21: Adam with
 * beta1 = beta2 = 0.5, whose exp_avg_sq reaches the FP32 subnormals at step 90) were added later, their
 * lines taken from `test_kat --write` of this code and appended to the file; the test also counts the
 * subnormals in that run's state and shows that flush-to-zero changes its state hash from step 90 on.
 *
 * Issue 23 (before the operation kinds are moved into families) added the residual CNN and the GPT in
 * both rounding modes, small recipes of recipes/resnet-cifar10.json and recipes/gpt-shakespeare.json
 * (every CNN and GPT kind of the step, dropout included; a few steps, per-operation hashes of each), and
 * for the GPT the exactly rounded evaluation pass (its text loss after the last step and a sample); their
 * answers live in tests/kat/arch.kat, written by this code before any move:
 *     test_kat --write tests/kat/arch.kat resnet gpt
 * (`--write FILE NAME...` writes only the named configurations' answers; without names, all of them).
 * Each log-rounded twin ("...-log") must give its exact twin's answers line for line. Issue 27 added the
 * resnet as step program 2 (program_version=2: conv2d, conv2d_weight_grad and conv2d_input_grad, no im2col
 * tensor, no gathered input gradient), exact and log-rounded, as twins of "resnet": program 1's answers line
 * for line less the lines of the tensors program 2 does not have (".columns", ".out.grad.gathered",
 * ".weight.transposed"); and, after the last step of the resnet configurations, the hash of the evaluation
 * pass's probabilities of its second batch ("evalprobs", appended to arch.kat from this code's
 * program-1 run). Issue 39 added step program 3 (the GPT's and the CNN's programs derived from their forward
 * graphs, a new run's default) as twins of "gpt" and "resnet" in both roundings: every pinned answer of the
 * hand-written program, per-operation outputs included, under the reference program's tensor names
 * (v3_names). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/vt_bytes.h"
#include "../../common/vt_hash.h"
#include "../../common/vt_par.h"
#include "../../arch/vt_arch.h"
#include "../../data/vt_data.h"
#include "../../model/vt_model.h"
#include "../../model/vt_probe.h"
#include "../../ops/vt_ops.h"
#include "../../rounding/vt_round.h"
#include "vt_test.h"

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#endif

static const char *const KAT_FILES[] = {"tests/kat/mlp.kat", "tests/kat/arch.kat", "tests/kat/losses.kat",
                                        "tests/kat/tc.kat"};
#define N_KAT_FILES (sizeof KAT_FILES / sizeof KAT_FILES[0])
#define MAX_LINES 16384

typedef struct {
    const char *name, *dataset, *set; /* dataset NULL: the recipe's (with its subset) */
    uint64_t steps;
    uint64_t op_steps[3]; /* steps whose per-operation hashes are pinned */
    const char *recipe;   /* the recipe file the settings apply to; NULL: the default recipe (the MLP) */
    const char *twin;     /* a log-rounded twin: its answers are those of configuration `twin`, line for line */
} kat_cfg;

#define CNN_SET                                                                                                    \
    "subset=256 resnet_width=4 resnet_stages=2 batch=8 checkpoint_every=3 state_hash_every=1 decay_every=2"
#define GPT_SET                                                                                                    \
    "gpt_layers=1 gpt_heads=2 gpt_width=16 gpt_context=8 batch=4 warmup=1 dropout=0.1 checkpoint_every=3 "        \
    "state_hash_every=1"

static const kat_cfg CFGS[] = {
    {"digits-adam", "digits", "layers=[64,32,16,10] optimizer=adam lr=0.002 batch=32 seed=7", 12, {1, 2, 12}, NULL, NULL},
    /* issue 21: Adam with beta1 = beta2 = 0.5 lets exp_avg_sq decay into the FP32 subnormals; its
     * state at step 90 holds the first one. Under flush-to-zero its state hash differs from step 90 on
     * (checked below, x86): gradual underflow is part of what these answers pin */
    {"mnist-adam-subnormal", "mnist-train", "optimizer=adam beta1=0.5 beta2=0.5 lr=0.001", 90, {1, 90, 0}, NULL, NULL},
    {"mnist-sgd", "mnist-train", "", 6, {1, 2, 6}, NULL, NULL},
    {"mnist-sgd-log", "mnist-train", "rounding=log", 6, {1, 2, 6}, NULL, "mnist-sgd"},
    /* issue 23: the CNN's and the GPT's kinds, exact and log */
    {"resnet", NULL, CNN_SET, 3, {1, 2, 3}, "recipes/resnet-cifar10.json", NULL},
    {"resnet-log", NULL, CNN_SET " rounding=log", 3, {1, 2, 3}, "recipes/resnet-cifar10.json", "resnet"},
    /* issue 27: step program 2's convolutions (conv2d, conv2d_weight_grad, conv2d_input_grad: no im2col
     * tensor, no gathered G) compute the same reductions, so their runs give program 1's answers line for
     * line, less those tensors' (v1_only): losses, state hashes, every other operation's output and the
     * evaluation's outputs */
    {"resnet-v2", NULL, CNN_SET " program_version=2", 3, {1, 2, 3}, "recipes/resnet-cifar10.json", "resnet"},
    {"resnet-v2-log", NULL, CNN_SET " program_version=2 rounding=log", 3, {1, 2, 3}, "recipes/resnet-cifar10.json",
     "resnet"},
    {"gpt", NULL, GPT_SET, 3, {1, 2, 3}, "recipes/gpt-shakespeare.json", NULL},
    {"gpt-log", NULL, GPT_SET " rounding=log", 3, {1, 2, 3}, "recipes/gpt-shakespeare.json", "gpt"},
    /* issue 39: step program 3, derived from the architectures' forward graphs (the default of a new run),
     * gives the pinned answers of the hand-written programs: each of its operations is matched to the
     * reference program's (the GPT's program 1, the CNN's program 2) by kind, arguments and matched inputs,
     * its outputs answer under the reference's tensor names (v3_names), and the lines are compared as a
     * multiset (the CNN's backward pass runs in the graph's order) */
    {"resnet-v3", NULL, CNN_SET " program_version=3", 3, {1, 2, 3}, "recipes/resnet-cifar10.json", "resnet"},
    {"resnet-v3-log", NULL, CNN_SET " program_version=3 rounding=log", 3, {1, 2, 3}, "recipes/resnet-cifar10.json",
     "resnet"},
    {"gpt-v3", NULL, GPT_SET " program_version=3", 3, {1, 2, 3}, "recipes/gpt-shakespeare.json", "gpt"},
    {"gpt-v3-log", NULL, GPT_SET " program_version=3 rounding=log", 3, {1, 2, 3}, "recipes/gpt-shakespeare.json",
     "gpt"},
    /* issue 42 item 2: the tensor-core mode (gemm_arith) on step programs 2 and 3. Program 1's runs in the
     * mode are pinned (tests/kat/tc.kat); the CNN's conv2d kinds then give program 1's im2col and matmul
     * answers in the mode line for line (programs 2 and 3), and the GPT's program 3 its program 1's */
    {"resnet-tc", NULL, CNN_SET " program_version=1 gemm_arith=tc-bf16-sm90", 3, {1, 2, 3}, "recipes/resnet-cifar10.json",
     NULL},
    {"resnet-v2-tc", NULL, CNN_SET " program_version=2 gemm_arith=tc-bf16-sm90", 3, {1, 2, 3},
     "recipes/resnet-cifar10.json", "resnet-tc"},
    {"resnet-v3-tc", NULL, CNN_SET " program_version=3 gemm_arith=tc-bf16-sm90", 3, {1, 2, 3},
     "recipes/resnet-cifar10.json", "resnet-tc"},
    {"gpt-tc", NULL, GPT_SET " program_version=1 gemm_arith=tc-fp16-sm90", 3, {1, 2, 3}, "recipes/gpt-shakespeare.json",
     NULL},
    {"gpt-v3-tc", NULL, GPT_SET " program_version=3 gemm_arith=tc-fp16-sm90", 3, {1, 2, 3},
     "recipes/gpt-shakespeare.json", "gpt-tc"},
};
#define N_CFGS (sizeof CFGS / sizeof CFGS[0])

static char *g_lines[MAX_LINES];

/* an answer of a tensor only step program 1 has: the im2col matrices, the input gradient's gather G and
 * transposed weight W' (program 2's conv2d, conv2d_weight_grad and conv2d_input_grad gather inside) */
static int v1_only(const char *line)
{
    return strstr(line, ".columns ") || strstr(line, ".out.grad.gathered ") || strstr(line, ".weight.transposed ");
}
static size_t g_n;

static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (g_n < MAX_LINES) g_lines[g_n++] = strdup(buf);
}

typedef struct {
    const kat_cfg *cfg;
    const char *label;  /* the answers' name: log and exact MNIST runs share one */
    char *const *names; /* step program 3: each tensor's name in the reference program (NULL: its own) */
} hook_ctx;

/* Whether operation a of program p (its inputs named by pn) and operation b of the reference r read the same
 * tensors for the same computation: kind, counts, arguments, and the inputs (in order; a two-input add either
 * way: a sum of two gradients, which the derivation may write in the other order - the same sum). */
static int same_op(const vt_program *p, const vt_opdesc *a, char *const *pn, const vt_program *r, const vt_opdesc *b)
{
    if (a->kind != b->kind || a->n_in != b->n_in || a->n_out != b->n_out || a->n_iarg != b->n_iarg ||
        a->n_farg != b->n_farg || (a->n_iarg && memcmp(a->iarg, b->iarg, a->n_iarg * sizeof *a->iarg)) ||
        (a->n_farg && memcmp(a->farg, b->farg, a->n_farg * sizeof *a->farg)))
        return 0;
    for (uint32_t k = 0; k < a->n_out; k++)
        if (p->t[a->out[k]].n != r->t[b->out[k]].n || p->t[a->out[k]].dtype != r->t[b->out[k]].dtype) return 0;
    int same = 1, swapped = a->n_in == 2;
    for (uint32_t k = 0; k < a->n_in; k++) {
        same &= pn[a->in[k]] && strcmp(pn[a->in[k]], r->t[b->in[k]].name) == 0;
        if (a->n_in == 2) swapped &= pn[a->in[k]] && strcmp(pn[a->in[k]], r->t[b->in[1 - k]].name) == 0;
    }
    return same || (swapped && strcmp(vt_opkind_get(a->kind)->name, "add") == 0);
}

/* Program 3's tensor names in the reference program r (calloc'd, p->n_tensors entries; NULL when an operation
 * has no counterpart, CHECKed): the state and the tensors no operation writes (the batch) by their own name, which
 * must be r's; then every step operation, in order, matched to the first unused operation of r that computes the
 * same (same_op) - one whose first output has the same name first - its outputs taking that operation's output
 * names. */
static char **v3_names(const vt_program *p, const vt_program *r)
{
    char **nm = calloc(p->n_tensors, sizeof *nm);
    uint8_t *written = calloc(p->n_tensors, 1), *used = calloc(r->n_ops + 1, 1);
    int ok = nm && written && used;
    for (uint32_t j = 1; ok && j <= p->n_ops; j++)
        for (uint32_t k = 0; k < p->op[j].n_out; k++) written[p->op[j].out[k]] = 1;
    for (uint32_t t = 0; ok && t < p->n_tensors; t++)
        if (t < p->n_state || !written[t]) {
            uint32_t u = 0;
            while (u < r->n_tensors && strcmp(r->t[u].name, p->t[t].name) != 0) u++;
            if (u < r->n_tensors) nm[t] = r->t[u].name;
        }
    for (uint32_t j = 1; ok && j <= p->n_ops; j++) {
        /* two that compute the same from the same inputs (a gradient's column sums for two batch norms) are
         * told apart by their outputs' names where the names agree */
        uint32_t i = 1;
        while (i <= r->n_ops && (used[i] || !same_op(p, &p->op[j], nm, r, &r->op[i]) ||
                                 strcmp(p->t[p->op[j].out[0]].name, r->t[r->op[i].out[0]].name) != 0))
            i++;
        if (i > r->n_ops)
            for (i = 1; i <= r->n_ops && (used[i] || !same_op(p, &p->op[j], nm, r, &r->op[i]));) i++;
        CHECK(i <= r->n_ops, "program 3's operation %u (%s) computes nothing of the reference program's", j, p->op[j].name);
        if (i > r->n_ops) ok = 0;
        else {
            used[i] = 1;
            for (uint32_t k = 0; k < p->op[j].n_out; k++) nm[p->op[j].out[k]] = r->t[r->op[i].out[k]].name;
        }
    }
    free(written);
    free(used);
    if (!ok) free(nm);
    return ok ? nm : NULL;
}

/* After each operation of a pinned step: the SHA-256 of each tensor it writes, by name. */
static vt_err hook(void *ctx, vt_model *m, uint64_t step, uint32_t op)
{
    const hook_ctx *h = ctx;
    int pinned = 0;
    for (int k = 0; k < 3; k++) pinned |= h->cfg->op_steps[k] == step;
    if (!pinned) return VT_OK;
    const vt_opdesc *o = &m->prog.op[op];
    for (uint32_t k = 0; k < o->n_out; k++) {
        uint8_t d[32];
        char hex[65];
        VT_FORWARD_IF_ERROR(vt_model_tensor_hash(m, o->out[k], d));
        vt_hex(d, 32, hex);
        emit("%s out %llu %s %s", h->label, (unsigned long long)step,
             h->names ? h->names[o->out[k]] : m->prog.t[o->out[k]].name, hex);
    }
    return VT_OK;
}

#define SUBNORMAL_CFG "mnist-adam-subnormal"

/* The subnormal recipe: its state holds FP32 subnormals (counted), and run with flush-to-zero and
 * denormals-are-zero forced in MXCSR (what a -ffast-math library sets; vt_model_run directly, past
 * the step driver's environment check) its state hashes equal the gradual-underflow ones (sh, one
 * per step) up to the step before the first subnormal and differ from that step on. */
static void subnormal_check(const vt_recipe *rc, const vt_dataset *ds, const vt_model *m, uint8_t (*sh)[32])
{
    size_t nsub = 0, first = 0;
    for (size_t i = 0; i < m->n_state; i++) nsub += fpclassify(m->state[i]) == FP_SUBNORMAL;
    CHECK(nsub > 0, SUBNORMAL_CFG ": no FP32 subnormal in the state of step %llu", (unsigned long long)rc->steps);
    printf(SUBNORMAL_CFG ": %zu FP32 subnormals in the state of step %llu\n", nsub, (unsigned long long)rc->steps);
#ifdef HAVE_MXCSR
    vt_model f;
    CHECK_OK(vt_model_init(&f, rc, ds->n, VT_ORDER_BLAS));
    if (!f.state) return;
    vt_steplog log;
    vt_steplog_init(&log, 0);
    vt_rctx ctx;
    vt_rctx_init(&ctx, VT_RMODE_RECORD, rc->bound);
    const unsigned csr = _mm_getcsr();
    /* MXCSR is per thread: forced here on this thread only, so every loop runs here (one thread) */
    const int threads = vt_par_threads();
    vt_par_set_threads(1);
    for (uint64_t s = 1; s <= rc->steps && !first; s++) {
        _mm_setcsr(csr | 0x8040u);
        vt_err e = vt_rctx_begin_step(&ctx, s, &log);
        if (!e) e = vt_model_run(&f, ds, &ctx, f.n_ops, NULL, NULL);
        if (!e) e = vt_rctx_end_step(&ctx);
        _mm_setcsr(csr);
        uint8_t h[32];
        if (!e) e = vt_model_state_hash(&f, h);
        if (e || memcmp(h, sh[s - 1], 32) != 0) first = s;
    }
    vt_par_set_threads(threads);
    vt_steplog_free(&log);
    vt_model_free(&f);
    CHECK(first == rc->steps, SUBNORMAL_CFG ": under FTZ the state first differs at step %zu, expected %llu", first,
          (unsigned long long)rc->steps);
    printf(SUBNORMAL_CFG ": under FTZ+DAZ the state hashes agree to step %zu and differ at step %zu\n", first - 1, first);
#else
    (void)ds;
    (void)sh;
#endif
}

/* The recipe of cfg; 0 on success. */
static int cfg_recipe(const kat_cfg *cfg, vt_recipe *rc)
{
    vt_recipe_default(rc);
    if (cfg->recipe) {
        vt_err e = vt_recipe_load_file(rc, cfg->recipe);
        CHECK(e == VT_OK, "%s: %s", cfg->recipe, vt_errmsg());
        if (e) return -1;
    }
    if (cfg->dataset) snprintf(rc->dataset, sizeof rc->dataset, "%s", cfg->dataset);
    char set[256];
    snprintf(set, sizeof set, "%s", cfg->set);
    for (char *tok = strtok(set, " "); tok; tok = strtok(NULL, " ")) CHECK_OK(vt_recipe_set(rc, tok));
    rc->steps = cfg->steps;
    CHECK_OK(vt_recipe_validate(rc));
    return 0;
}

/* The GPT's evaluation pass after the last step, exactly rounded: its text loss over a few windows
 * and a sample (their bits). */
static void text_answers(const char *label, vt_model *m, const vt_dataset *ds, uint64_t step)
{
    double nats = 0;
    size_t pos = 0;
    CHECK_OK(vt_model_text_loss(m, ds, 4, &nats, &pos));
    uint64_t bits;
    memcpy(&bits, &nats, sizeof bits);
    emit("%s textloss %llu %016llx", label, (unsigned long long)step, (unsigned long long)bits);
    const uint8_t prompt[1] = {0};
    uint8_t out[24];
    char hex[2 * sizeof out + 1];
    CHECK_OK(vt_model_sample(m, 1, prompt, 1, sizeof out, out));
    vt_hex(out, sizeof out, hex);
    emit("%s sample %llu %s", label, (unsigned long long)step, hex);
}

/* Runs cfg in `order`, appending its answers to g_lines; 0 on success. */
static int run_cfg(const kat_cfg *cfg, const vt_dataset *ds, vt_order order)
{
    vt_recipe rc;
    if (cfg_recipe(cfg, &rc)) return -1;
    vt_model m;
    CHECK_OK(vt_model_init(&m, &rc, ds->n, order));
    if (!m.state) return -1;
    vt_steplog log;
    vt_steplog_init(&log, 0);
    vt_rctx ctx;
    vt_rctx_init(&ctx, VT_RMODE_RECORD, rc.bound);
    const char *label = cfg->twin ? cfg->twin : cfg->name;
    hook_ctx h = {cfg, label, NULL};
    int rc_ = 0;
    vt_program ref;
    memset(&ref, 0, sizeof ref);
    char **names = NULL;
    if (rc.program_version == 3) { /* the hand-written program it reproduces: the GPT's 1, the CNN's 2 */
        vt_recipe rr = rc;
        rr.program_version = rc.arch == VT_ARCH_GPT ? 1 : 2;
        CHECK_OK(vt_program_build(&rr, &ref));
        h.names = names = v3_names(&m.prog, &ref);
        if (!names) rc_ = -1;
    }
    const int subnormal = strcmp(cfg->name, SUBNORMAL_CFG) == 0 && order == VT_ORDER_BLAS;
    uint8_t(*hashes)[32] = subnormal ? calloc(cfg->steps, 32) : NULL;
    for (uint64_t s = 1; s <= cfg->steps && !rc_; s++) {
        float loss = 0;
        vt_err e = vt_rctx_begin_step(&ctx, s, &log);
        if (!e) e = vt_model_run(&m, ds, &ctx, m.n_ops, hook, &h);
        if (!e) e = vt_rctx_end_step(&ctx);
        if (e) {
            CHECK(0, "%s (%s): step %llu: %s", cfg->name, vt_order_name(order), (unsigned long long)s, vt_errmsg());
            rc_ = -1;
            break;
        }
        loss = vt_model_loss(&m);
        uint8_t sh[32];
        char hex[65];
        CHECK_OK(vt_model_state_hash(&m, sh));
        vt_hex(sh, 32, hex);
        emit("%s loss %llu %08x", label, (unsigned long long)s, vt_f32_bits(loss));
        emit("%s state %llu %s", label, (unsigned long long)s, hex);
        if (hashes) memcpy(hashes[s - 1], sh, 32);
    }
    if (hashes && !rc_) subnormal_check(&rc, ds, &m, hashes);
    if (!rc_ && rc.arch == VT_ARCH_GPT) text_answers(label, &m, ds, cfg->steps);
    if (!rc_ && rc.arch == VT_ARCH_RESNET) { /* the evaluation pass's probabilities of its last batch */
        double acc = 0;
        uint8_t d[32];
        char hex[65];
        CHECK_OK(vt_model_accuracy(&m, ds, 2 * (size_t)rc.batch, &acc));
        CHECK_OK(vt_model_tensor_hash(&m, m.prog.probs, d));
        vt_hex(d, 32, hex);
        emit("%s evalprobs %llu %s", label, (unsigned long long)cfg->steps, hex);
    }
    free(hashes);
    free(names);
    vt_program_free(&ref);
    vt_steplog_free(&log);
    vt_model_free(&m);
    return rc_;
}

/* The datasets the configurations use, each loaded once (by its vt_data_load spec). */
#define MAX_DS 8
static struct {
    char spec[VT_RECIPE_DATASET_MAX + 32];
    vt_dataset ds;
} g_ds[MAX_DS];
static size_t g_nds;

static const vt_dataset *dataset_of(const kat_cfg *cfg)
{
    vt_recipe rc;
    if (cfg_recipe(cfg, &rc)) return NULL;
    char spec[VT_RECIPE_DATASET_MAX + 32];
    if (rc.subset)
        snprintf(spec, sizeof spec, "%s:%llu", rc.dataset, (unsigned long long)rc.subset);
    else
        snprintf(spec, sizeof spec, "%s", rc.dataset);
    for (size_t i = 0; i < g_nds; i++)
        if (strcmp(g_ds[i].spec, spec) == 0) return &g_ds[i].ds;
    if (g_nds == MAX_DS) return NULL;
    vt_err e = vt_data_load(spec, NULL, &g_ds[g_nds].ds);
    CHECK(e == VT_OK, "load %s: %s", spec, vt_errmsg());
    if (e) return NULL;
    snprintf(g_ds[g_nds].spec, sizeof g_ds[g_nds].spec, "%s", spec);
    return &g_ds[g_nds++].ds;
}

/* Issue 39 (the losses of regression and multi-label models): the hand-built losses' program of the
 * known-answer probe (vt_probe_losses_run: load_batch_targets, then mse, l1 and bce with logits, each loss
 * and its gradient; then sigmoid, tanh, leaky ReLU and GELU (erf form) and their backward kinds, the
 * targets for dY) over
 * 64 examples of 5 logits and float targets in batches of 16, three steps: the
 * SHA-256 of every output of every step ("losses out STEP TENSOR HEX"), exact rounding; the log-rounded
 * run must give the same lines. Written by `test_kat --write tests/kat/losses.kat losses`. */
#define LOSSES "losses"

typedef struct {
    char **lines;
    size_t n, cap;
} line_list;

static vt_err losses_hook(void *ctx, vt_model *m, uint64_t step, uint32_t op)
{
    line_list *l = ctx;
    const vt_opdesc *o = &m->prog.op[op];
    for (uint32_t k = 0; k < o->n_out; k++) {
        uint8_t d[32];
        char hex[65], line[256];
        VT_FORWARD_IF_ERROR(vt_model_tensor_hash(m, o->out[k], d));
        vt_hex(d, 32, hex);
        snprintf(line, sizeof line, LOSSES " out %llu %s %s", (unsigned long long)step, m->prog.t[o->out[k]].name, hex);
        if (l->n < l->cap) l->lines[l->n++] = strdup(line);
    }
    return VT_OK;
}

/* the losses' answers into g_lines (exact rounding), checked against the log-rounded run's */
static void losses_answers(void)
{
    char *log_lines[256];
    line_list ex = {g_lines + g_n, 0, MAX_LINES - g_n}, lg = {log_lines, 0, 256};
    CHECK_OK(vt_probe_losses_run(64, 5, 16, 0x6c6f737365733339ull, 3, VT_ROUNDING_EXACT, NULL, NULL, losses_hook, &ex));
    CHECK_OK(vt_probe_losses_run(64, 5, 16, 0x6c6f737365733339ull, 3, VT_ROUNDING_LOG, NULL, NULL, losses_hook, &lg));
    CHECK(ex.n == lg.n && ex.n == 3 * 16, LOSSES ": %zu answers in exact rounding, %zu in log rounding", ex.n, lg.n);
    for (size_t i = 0; i < lg.n; i++) {
        CHECK(i < ex.n && strcmp(ex.lines[i], lg.lines[i]) == 0, LOSSES ": log rounding gives \"%s\"", lg.lines[i]);
        free(lg.lines[i]);
    }
    g_n += ex.n;
}

static int cmp_line(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Whether the lines want[0..nw) (less program 1's im2col tensors' when skip_v1) and got[0..ng) are the same
 * multiset. */
static int same_lines(char **want, size_t nw, char **got, size_t ng, int skip_v1)
{
    char **a = calloc(nw + 1, sizeof *a), **b = calloc(ng + 1, sizeof *b);
    size_t na = 0;
    int same = a && b;
    for (size_t i = 0; same && i < nw; i++)
        if (!skip_v1 || !v1_only(want[i])) a[na++] = want[i];
    if (same) {
        memcpy(b, got, ng * sizeof *b);
        qsort(a, na, sizeof *a, cmp_line);
        qsort(b, ng, sizeof *b, cmp_line);
        same = na == ng;
        for (size_t i = 0; same && i < na; i++) same = strcmp(a[i], b[i]) == 0;
        for (size_t i = 0; !same && i < na && i < ng; i++)
            if (strcmp(a[i], b[i]) != 0) {
                printf("first difference: pinned \"%s\", got \"%s\"\n", a[i], b[i]);
                break;
            }
    }
    free(a);
    free(b);
    return same;
}

/* Whether configuration c runs: every one, or with `--write FILE NAME...` the named ones and their twins. */
static int selected(const kat_cfg *c, char **names, int n_names)
{
    if (n_names == 0) return 1;
    for (int i = 0; i < n_names; i++)
        if (strcmp(c->name, names[i]) == 0 || (c->twin && strcmp(c->twin, names[i]) == 0)) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *write = argc >= 3 && strcmp(argv[1], "--write") == 0 ? argv[2] : NULL;
    if (argc != 1 && !write) {
        fprintf(stderr, "usage: test_kat [--write FILE [NAME...]]\n");
        return 64;
    }
    char **names = write ? argv + 3 : NULL;
    const int n_names = write ? argc - 3 : 0;
    static const vt_order orders[] = {VT_ORDER_BLAS, VT_ORDER_PAIRWISE};
    size_t ref_n = 0;
    char **ref = NULL;
    for (int oi = 0; oi < (write ? 1 : 2); oi++) {
        g_n = 0;
        size_t from[N_CFGS + 1];
        for (size_t c = 0; c < N_CFGS; c++) {
            from[c] = g_n;
            if (!selected(&CFGS[c], names, n_names)) continue;
            const vt_dataset *ds = dataset_of(&CFGS[c]);
            if (ds) run_cfg(&CFGS[c], ds, orders[oi]);
        }
        from[N_CFGS] = g_n;
        /* a log-rounded twin gives its exact twin's answers, line for line; its lines are then dropped */
        for (size_t c = 0; c < N_CFGS; c++) {
            if (!CFGS[c].twin) continue;
            size_t t = 0;
            while (t < N_CFGS && strcmp(CFGS[t].name, CFGS[c].twin) != 0) t++;
            size_t ne = t < N_CFGS ? from[t + 1] - from[t] : 0, nl = from[c + 1] - from[c], i = 0, r = 0;
            const int v2 = strstr(CFGS[c].name, "-v2") || (strstr(CFGS[c].name, "-v3") && strstr(CFGS[c].name, "resnet"));
            if (strstr(CFGS[c].name, "-v3")) { /* the same lines, in any order (no im2col tensors for the CNN) */
                CHECK(same_lines(g_lines + from[t], ne, g_lines + from[c], nl, v2),
                      "order %s: the run %s differs from %s (%zu and %zu lines)", vt_order_name(orders[oi]), CFGS[c].name,
                      CFGS[c].twin, nl, ne);
                continue;
            }
            /* no im2col tensors: their lines skipped */
            for (;; i++, r++) {
                while (v2 && r < ne && v1_only(g_lines[from[t] + r])) r++;
                if (i >= nl || r >= ne || strcmp(g_lines[from[t] + r], g_lines[from[c] + i]) != 0) break;
            }
            CHECK(r == ne && i == nl, "order %s: the run %s differs from %s (%zu and %zu lines): \"%s\"",
                  vt_order_name(orders[oi]), CFGS[c].name, CFGS[c].twin, nl, ne, i < nl ? g_lines[from[c] + i] : "(none)");
        }
        size_t keep = 0;
        for (size_t c = 0; c < N_CFGS; c++)
            for (size_t i = from[c]; i < from[c + 1]; i++) {
                if (CFGS[c].twin)
                    free(g_lines[i]);
                else
                    g_lines[keep++] = g_lines[i];
            }
        g_n = keep;
        int losses = n_names == 0;
        for (int i = 0; i < n_names; i++) losses |= strcmp(names[i], LOSSES) == 0;
        if (losses) losses_answers();
        if (write) break;
        /* compare with the file */
        if (!ref) {
            ref = calloc(MAX_LINES, sizeof *ref);
            for (size_t fi = 0; fi < N_KAT_FILES; fi++) {
                FILE *f = fopen(KAT_FILES[fi], "r");
                CHECK(f != NULL, "cannot open %s", KAT_FILES[fi]);
                if (!f) continue;
                char line[256];
                while (ref_n < MAX_LINES && fgets(line, sizeof line, f)) {
                    line[strcspn(line, "\n")] = 0;
                    if (line[0] == '#' || line[0] == 0) continue;
                    ref[ref_n++] = strdup(line);
                }
                fclose(f);
            }
        }
        /* every pinned answer is produced, with the pinned value; a tensor the program writes that the
         * answers do not name (a new operation's output) is counted, not compared */
        size_t bad = 0, extra = 0;
        for (size_t i = 0; i < ref_n; i++) {
            /* a tensor several operations of a step write (in place) has one answer per write, in order:
             * the occ-th pinned line of a key is compared with the occ-th produced line of that key */
            size_t kl = strrchr(ref[i], ' ') - ref[i], occ = 0;
            for (size_t j = 0; j < i; j++) occ += strncmp(ref[j], ref[i], kl + 1) == 0;
            const char *got = NULL;
            for (size_t k = 0; k < g_n && !got; k++)
                if (strncmp(g_lines[k], ref[i], kl + 1) == 0 && occ-- == 0) got = g_lines[k];
            if ((!got || strcmp(got, ref[i]) != 0) && bad++ < 5)
                CHECK(0, "order %s: pinned \"%s\", got \"%s\"", vt_order_name(orders[oi]), ref[i], got ? got : "(nothing)");
        }
        for (size_t k = 0; k < g_n; k++) {
            size_t kl = strrchr(g_lines[k], ' ') - g_lines[k];
            int known = 0;
            for (size_t i = 0; i < ref_n && !known; i++) known = strncmp(g_lines[k], ref[i], kl + 1) == 0;
            if (!known) {
                CHECK(strstr(g_lines[k], " out ") != NULL, "order %s: \"%s\" is not pinned", vt_order_name(orders[oi]), g_lines[k]);
                extra++;
            }
        }
        CHECK(bad == 0, "order %s: %zu of %zu answers differ from tests/kat", vt_order_name(orders[oi]), bad, ref_n);
        printf("order %s: %zu answers, %zu of the %zu pinned as pinned, %zu outputs not pinned\n", vt_order_name(orders[oi]),
               g_n, ref_n - bad, ref_n, extra);
        if (!write)
            for (size_t i = 0; i < g_n; i++) free(g_lines[i]);
    }
    if (write) {
        FILE *f = fopen(write, "w");
        CHECK(f != NULL, "cannot write %s", write);
        if (f) {
            fprintf(f, "# test_kat answers (tests/unit/test_kat.c): name kind step [tensor] hex; written by test_kat --write\n");
            for (size_t i = 0; i < g_n; i++) fprintf(f, "%s\n", g_lines[i]);
            fclose(f);
            printf("wrote %zu lines to %s\n", g_n, write);
        }
        for (size_t i = 0; i < g_n; i++) free(g_lines[i]);
    }
    for (size_t r = 0; r < ref_n; r++) free(ref[r]);
    free(ref);
    for (size_t i = 0; i < g_nds; i++) vt_data_free(&g_ds[i].ds);
    return vt_test_finish("test_kat");
}
