/* test_gradcheck.c - the CNN's operations against mathematics, not only against themselves.
 *
 * A. Finite differences in FP64. The plain FP64 interpreter (model/vt_plain.h: the same program,
 *    each kind computed directly in double) runs a tiny residual CNN (digits 1x8x8, width 4, two
 *    stages, max pool, batch 4) forward and backward once. For pairs (tensor A, its gradient
 *    tensor dA) chosen so that every new kind's backward is exercised - conv weight and input
 *    gradients (3x3, strided, 1x1 projection), batch norm's weight, bias and input gradients, max
 *    pool, residual add and ReLU, global average pool, fc - eight elements a of A are perturbed by
 *    +-h and the forward pass from A's producer to the loss rerun: (L(a+h) - L(a-h)) / 2h must
 *    match dA within the tolerance TOL_REL * max(|fd|, |dA|) + TOL_ABS. An element whose central
 *     differences at h and h/2 disagree, or whose one-sided differences do, sits on a kink (ReLU at
 *    0, a max-pool tie) and is skipped; at most half of a tensor's elements may be.
 * B. The verified kinds against the plain FP64 kinds. One training step of the verified
 *    interpreter (exact rounding); before each operation its inputs are copied into the plain
 *    model and the plain operation run on them: the verified FP32 output must be within 2 units in
 *    the last place (FP32) of the plain FP64 result, every element, every operation. With A, this
 *    ties the verified backward passes to the derivative of the forward pass. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../data/vt_data.h"
#include "../../model/vt_model.h"
#include "../../model/vt_plain.h"
#include "vt_test.h"

#define TOL_REL 1e-5
#define TOL_ABS 1e-9

static const char *RECIPE[] = {"arch=resnet", "dataset=digits", "layers=[64,10]", "image_channels=1",
                               "image_height=8", "image_width=8", "resnet_width=4", "resnet_stages=2",
                               "resnet_blocks=1", "resnet_pool=1", "batch=4", "steps=5", "lr=0.1",
                               "weight_decay=0.0005", NULL};

static uint32_t find_kind(const vt_program *p, uint16_t kind)
{
    for (uint32_t j = 1; j <= p->n_ops; j++)
        if (p->op[j].kind == kind) return j;
    return 0;
}

static uint32_t tensor(const vt_program *p, const char *name)
{
    uint32_t t = vt_program_find(p, name);
    CHECK(t != UINT32_MAX, "no tensor %s", name);
    return t;
}

/* the first operation of the forward pass that writes t (0: none - a parameter) */
static uint32_t writer(const vt_program *p, uint32_t t, uint32_t last)
{
    for (uint32_t j = 1; j <= last; j++)
        if (vt_op_writes(&p->op[j], t)) return j;
    return 0;
}

static double loss_at(vt_plain *P, const vt_dataset *ds, uint32_t from, uint32_t lj)
{
    vt_err e = vt_plain_run(P, ds, 1, from, lj);
    CHECK(e == VT_OK, "forward: %s", vt_errmsg());
    return *(const double *)vt_plain_tensor(P, P->prog.loss);
}

typedef struct {
    const char *a, *da, *what;
} pair;

static const pair CNN_PAIRS[] = {
    {"stem.conv.weight", "stem.conv.weight.grad", "conv weight gradient (channels-first input)"},
    {"stem.bn.weight", "stem.bn.weight.grad", "batch-norm weight gradient"},
    {"stem.bn.bias", "stem.bn.bias.grad", "batch-norm bias gradient"},
    {"stem.conv.out", "stem.conv.out.grad", "batch-norm input gradient"},
    {"stem.bn.out", "stem.bn.out.grad", "ReLU backward"},
    {"stem.relu.out", "stem.relu.out.grad", "max-pool backward"},
    {"stem.pool.out", "layer1.0.in.grad", "block input gradient (conv input gradient + identity add)"},
    {"layer1.0.relu1.out", "layer1.0.conv2.in.grad", "conv input gradient (3x3, stride 1)"},
    {"layer1.0.add.out", "layer1.0.add.out.grad", "residual add and ReLU backward"},
    {"layer1.0.out", "layer2.0.in.grad", "strided conv and 1x1 projection input gradients"},
    {"layer2.0.conv1.weight", "layer2.0.conv1.weight.grad", "conv weight gradient (stride 2)"},
    {"layer2.0.shortcut.conv.weight", "layer2.0.shortcut.conv.weight.grad", "conv weight gradient (1x1, stride 2)"},
    {"layer2.0.bn2.weight", "layer2.0.bn2.weight.grad", "batch-norm weight gradient (residual branch)"},
    {"layer2.0.out", "layer2.0.out.grad", "global average pool backward"},
    {"pool.out", "pool.out.grad", "fc input gradient"},
    {"fc.weight", "fc.weight.grad", "fc weight gradient"},
    {NULL, NULL, NULL},
};

/* the character-level GPT (one layer, two heads, dropout, tied embedding) */
static const char *GPT[] = {"arch=gpt", "dataset=shakespeare-train", "gpt_layers=1", "gpt_heads=2", "gpt_width=8",
                            "gpt_context=8", "gpt_vocab=65", "gpt_tie=1", "dropout=0.1", "clip_norm=1.0",
                            "batch=2", "steps=5", "optimizer=adamw", "lr=0.01", "weight_decay=0.1",
                            "schedule=cosine", "warmup=2", NULL};

static const pair GPT_PAIRS[] = {
    {"wte.weight", "wte.weight.grad", "token embedding gradient (one-hot GEMM + tied head)"},
    {"wpe.weight", "wpe.weight.grad", "position embedding gradient"},
    {"embedding.out", "embedding.out.grad", "dropout backward (embedding)"},
    {"h0.ln_1.weight", "h0.ln_1.weight.grad", "layer-norm weight gradient"},
    {"h0.ln_1.bias", "h0.ln_1.bias.grad", "layer-norm bias gradient"},
    {"h0.ln_1.out", "h0.ln_1.out.grad", "QKV projection input gradient"},
    {"h0.attn.c_attn.weight", "h0.attn.c_attn.weight.grad", "QKV projection weight gradient"},
    {"h0.attn.q", "h0.attn.q.grad", "attention scores: q gradient"},
    {"h0.attn.k", "h0.attn.k.grad", "attention scores: k gradient"},
    {"h0.attn.v", "h0.attn.v.grad", "attention-weighted sum: v gradient"},
    {"h0.attn.scores", "h0.attn.scores.grad", "causal softmax backward"},
    {"h0.attn.probs", "h0.attn.probs.grad", "attention-weighted sum: probabilities gradient"},
    {"h0.attn.merged", "h0.attn.merged.grad", "output projection input gradient (heads merge)"},
    {"h0.attn.residual", "h0.attn.residual.grad", "residual add"},
    {"h0.mlp.c_fc.out", "h0.mlp.c_fc.out.grad", "GELU backward"},
    {"h0.mlp.c_proj.weight", "h0.mlp.c_proj.weight.grad", "FFN weight gradient (K = 4 width)"},
    {"ln_f.out", "ln_f.out.grad", "output head input gradient"},
    {NULL, NULL, NULL},
};

static void part_a(const vt_recipe *rc, const vt_dataset *ds, vt_rng *rng, const pair *PAIRS)
{
    vt_plain P;
    CHECK_OK(vt_plain_init(&P, rc, ds->n, 1));
    const vt_program *p = &P.prog;
    uint32_t lj = find_kind(p, VT_OPK_XENT_LOSS), uj = find_kind(p, VT_OPK_SGD_VELOCITY);
    if (!uj) uj = find_kind(p, VT_OPK_SUMSQ);
    CHECK(lj && uj > lj, "no loss or update operation");
    /* a few steps of training first, so that the values are not those of the initialisation */
    for (int s = 0; s < 3; s++) CHECK_OK(vt_plain_step(&P, ds, NULL));
    CHECK_OK(vt_plain_run(&P, ds, 1, 1, uj - 1)); /* forward and backward of step 1's batch */
    int checked = 0, skipped = 0;
    for (size_t q = 0; PAIRS[q].a; q++) {
        uint32_t a = tensor(p, PAIRS[q].a), da = tensor(p, PAIRS[q].da);
        if (a == UINT32_MAX || da == UINT32_MAX) continue;
        size_t n = p->t[a].n;
        CHECK(p->t[da].n == n, "%s and %s differ in size", PAIRS[q].a, PAIRS[q].da);
        double *g = malloc(n * sizeof *g);
        memcpy(g, vt_plain_tensor(&P, da), n * sizeof *g);
        uint32_t from = writer(p, a, lj) + 1;
        if (from == 1) from = p->fwd_first;
        double *x = vt_plain_tensor(&P, a), worst = 0;
        int pc = 0, ps = 0;
        for (int k = 0; k < 8; k++) {
            size_t i = (size_t)(vt_rng_uniform(rng) * (double)n);
            double x0 = x[i], fd[2], one[2] = {0, 0};
            double l0 = loss_at(&P, ds, from, lj);
            for (int r = 0; r < 2; r++) {
                double h = r ? 5e-6 : 1e-5;
                x[i] = x0 + h;
                double lp = loss_at(&P, ds, from, lj);
                x[i] = x0 - h;
                double lm = loss_at(&P, ds, from, lj);
                fd[r] = (lp - lm) / (2 * h);
                if (r) one[0] = (lp - l0) / h, one[1] = (l0 - lm) / h;
            }
            x[i] = x0;
            /* a kink between a - h and a + h: the central differences depend on h, or the one-sided
             * ones differ (a max-pool tie, a ReLU at 0) */
            if (fabs(fd[0] - fd[1]) > 1e-6 * fabs(fd[1]) + 1e-9 ||
                fabs(one[0] - one[1]) > 1e-2 * (fabs(one[0]) + fabs(one[1])) + 1e-6) {
                ps++;
                continue;
            }
            double err = fabs(fd[1] - g[i]), tol = TOL_REL * fmax(fabs(fd[1]), fabs(g[i])) + TOL_ABS;
            if (err / tol > worst) worst = err / tol;
            CHECK(err <= tol, "%s (%s) element %zu: finite difference %.12g, backward %.12g", PAIRS[q].a,
                  PAIRS[q].what, i, fd[1], g[i]);
            pc++;
        }
        (void)loss_at(&P, ds, from, lj); /* the forward values as they were */
        printf("  %-30s %-58s %d checked, %d on kinks, worst error %.2g of the tolerance\n", PAIRS[q].a, PAIRS[q].what,
               pc, ps, worst);
        CHECK(pc >= 4, "%s: %d of 8 elements on kinks", PAIRS[q].a, ps);
        checked += pc, skipped += ps;
        free(g);
    }
    printf("A: %d finite differences within %.0e relative + %.0e, %d skipped on kinks\n", checked, TOL_REL, TOL_ABS,
           skipped);
    vt_plain_free(&P);
}

/* ------------------------------------------------------------------ B */

typedef struct {
    vt_model *m;
    vt_plain *P;
    const vt_dataset *ds;
    uint32_t next;      /* the operation prepared in P */
    long elems, ops;
    double worst;       /* in ulps */
} cmp_ctx;

static void prepare(cmp_ctx *c, uint32_t j)
{
    c->next = j;
    if (j > c->m->prog.n_ops) return;
    const vt_opdesc *o = &c->m->prog.op[j];
    for (uint32_t k = 0; k < o->n_in; k++) {
        uint32_t t = o->in[k];
        const vt_tensor *d = &c->m->prog.t[t];
        size_t bytes = 0;
        const void *src = vt_model_tensor(c->m, t, &bytes);
        void *dst = vt_plain_tensor(c->P, t);
        if (d->dtype == VT_DT_F32)
            for (size_t i = 0; i < d->n; i++) ((double *)dst)[i] = ((const float *)src)[i];
        else memcpy(dst, src, bytes);
    }
    for (uint32_t k = 0; k < o->n_out; k++) { /* in-place outputs (velocity, running statistics) */
        uint32_t t = o->out[k];
        const vt_tensor *d = &c->m->prog.t[t];
        const void *src = vt_model_tensor(c->m, t, NULL);
        if (d->dtype == VT_DT_F32)
            for (size_t i = 0; i < d->n; i++) ((double *)vt_plain_tensor(c->P, t))[i] = ((const float *)src)[i];
    }
    CHECK_OK(vt_plain_run(c->P, c->ds, c->m->step + 1, j, j));
}

static vt_err after(void *ctx, vt_model *m, uint64_t step, uint32_t j)
{
    (void)step;
    cmp_ctx *c = ctx;
    const vt_opdesc *o = &m->prog.op[j];
    if (c->next == j) {
        for (uint32_t k = 0; k < o->n_out; k++) {
            const vt_tensor *d = &m->prog.t[o->out[k]];
            if (d->dtype != VT_DT_F32) continue;
            const float *v = vt_model_tensor(m, o->out[k], NULL);
            const double *q = vt_plain_tensor(c->P, o->out[k]);
            double mx = 0;
            for (size_t i = 0; i < d->n; i++) mx = fmax(mx, fabs(q[i]));
            int bad = 0;
            for (size_t i = 0; i < d->n; i++) {
                double ulp = fmax(ldexp(1.0, ilogb(fmax(fabs(q[i]), 0x1p-126)) - 23), 0x1p-149);
                double err = fabs((double)v[i] - q[i]);
                if (err / ulp > c->worst && err > 0x1p-60 * mx) c->worst = err / ulp;
                if (err > 2 * ulp && err > 0x1p-60 * mx && !bad) {
                    bad = 1;
                    CHECK(0, "operation %u (%s) output %s element %zu: verified %.9g, plain FP64 %.17g", j, o->name,
                          d->name, i, v[i], q[i]);
                }
            }
            if (!bad) vt_test_passed++;
            c->elems += (long)d->n;
        }
        c->ops++;
    }
    prepare(c, j + 1);
    return VT_OK;
}

static void part_b(const vt_recipe *rc, const vt_dataset *ds)
{
    vt_model m;
    vt_plain P;
    CHECK_OK(vt_model_init(&m, rc, ds->n, VT_ORDER_BLAS));
    CHECK_OK(vt_plain_init(&P, rc, ds->n, 1));
    vt_steplog log;
    vt_steplog_init(&log, 0);
    vt_rctx rx;
    vt_rctx_init(&rx, VT_RMODE_RECORD, rc->bound);
    cmp_ctx c = {&m, &P, ds, 0, 0, 0, 0};
    for (uint64_t s = 1; s <= 3; s++) {
        CHECK_OK(vt_rctx_begin_step(&rx, s, &log));
        prepare(&c, 1);
        CHECK_OK(vt_model_run(&m, ds, &rx, m.n_ops, after, &c));
        CHECK_OK(vt_rctx_end_step(&rx));
    }
    printf("B: %ld operations, %ld FP32 outputs: verified within 2 ulps of the plain FP64 kinds (worst %.2f ulp)\n",
           c.ops, c.elems, c.worst);
    CHECK(c.ops == 3L * m.n_ops, "compared %ld operations", c.ops);
    vt_steplog_free(&log);
    vt_plain_free(&P);
    vt_model_free(&m);
}

int main(void)
{
    vt_rng rng = {vt_test_seed(11)};
    vt_dataset ds;
    memset(&ds, 0, sizeof ds);
    if (vt_data_load("digits", NULL, &ds)) {
        CHECK(0, "digits: %s", vt_errmsg());
        return vt_test_finish("test_gradcheck");
    }
    vt_recipe rc;
    vt_recipe_default(&rc);
    for (int i = 0; RECIPE[i]; i++) CHECK_OK(vt_recipe_set(&rc, RECIPE[i]));
    part_a(&rc, &ds, &rng, CNN_PAIRS);
    vt_recipe ra = rc; /* the same with Adam and no pool: the other update and the unpooled stem */
    CHECK_OK(vt_recipe_set(&ra, "resnet_pool=0"));
    part_b(&rc, &ds);
    CHECK_OK(vt_recipe_set(&ra, "optimizer=adam"));
    part_b(&ra, &ds);
    vt_data_free(&ds);
    /* the GPT */
    vt_dataset tx;
    if (vt_data_load("shakespeare-train", NULL, &tx)) {
        CHECK(0, "shakespeare-train: %s", vt_errmsg());
        return vt_test_finish("test_gradcheck");
    }
    vt_recipe rg;
    vt_recipe_default(&rg);
    for (int i = 0; GPT[i]; i++) CHECK_OK(vt_recipe_set(&rg, GPT[i]));
    part_a(&rg, &tx, &rng, GPT_PAIRS);
    part_b(&rg, &tx);
    vt_recipe rn = rg; /* no dropout, no clipping, an untied head */
    CHECK_OK(vt_recipe_set(&rn, "dropout=0"));
    CHECK_OK(vt_recipe_set(&rn, "clip_norm=0"));
    CHECK_OK(vt_recipe_set(&rn, "gpt_tie=0"));
    part_b(&rn, &tx);
    vt_data_free(&tx);
    return vt_test_finish("test_gradcheck");
}
