/* The list of operation kinds (ops/vt_kinds.h) against every table generated from it: each
 * kind has every facet - the interpreter's entry (name, counts, argument names, rounded, family,
 * reduction axes, device, non-NULL check, exec and cost), a plain form in both precisions, the
 * device's facts - names and ids unique, the facets consistent with one another; and on the
 * programs of the three architectures (tiny sizes; every kind occurs in one of them): each
 * operation passes its kind's check and is refused with a count off by one, the device's
 * vt_dev_op_make takes exactly the kinds the list marks VT_DEV_ITEM (with a rounded count exactly
 * for the rounded kinds), and the batch reductions read batch-major tensors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/vt_dev_ops_hd.h"
#include "model/vt_model.h"
#include "ops/vt_ops.h"
#include "model/vt_plain.h"
#include "model/vt_probe.h"
#include "arch/vt_recipe.h"
#include "rounding/vt_exact.h"
#include "vt_test.h"

typedef struct {
    unsigned id;
    const char *idname, *name;
    int family, rounded, n_in, n_out, n_iarg, n_farg;
    const char *iargs, *fargs;
    int red, dev;
    const char *stem, *grad;
} kind_rec;

/* the list, walked here by its own generator */
static const kind_rec LIST[] = {
#define REC(ID, nm, fam, rd, ni, no, nia, nfa, ia, fa, rx, dv, st, gr)                                                     \
    {VT_OPK_##ID, #ID, nm, VT_FAM_##fam, rd, ni, no, nia, nfa, ia, fa, VT_RED_##rx, VT_DEV_##dv, #st, #gr},
    VT_KINDS(REC)
#undef REC
};
#define N_LIST (sizeof LIST / sizeof LIST[0])

static unsigned words(const char *s)
{
    unsigned n = 0;
    for (int in = 0; *s; s++) {
        if (*s != ' ' && !in) n++;
        in = *s != ' ';
    }
    return n;
}

static void check_list(void)
{
    CHECK(N_LIST == VT_OPK_COUNT - 1, "%zu kinds in the list, ids up to %d", N_LIST, (int)VT_OPK_COUNT - 1);
    CHECK(vt_opkind_get(0) == NULL && vt_opkind_get(VT_OPK_COUNT) == NULL, "ids outside the list have no entry");
    CHECK(!vt_kind_rounded(0) && vt_kind_device(0) == 0 && vt_kind_device(VT_OPK_COUNT) == 0, "no facets off the list");
    CHECK(!vt_plain_has_kind(0) && !vt_plain_has_kind(VT_OPK_COUNT), "no plain form off the list");
    for (size_t i = 0; i < N_LIST; i++) {
        const kind_rec *r = &LIST[i];
        const vt_opkind *k = vt_opkind_get((uint16_t)r->id);
        CHECK(r->id == i + 1, "%s: id %u at place %zu (ids are the list's order, from 1)", r->idname, r->id, i);
        CHECK(k != NULL, "%s: no entry", r->idname);
        if (!k) continue;
        /* the interpreter's entry is the list's line */
        CHECK(k->name && strcmp(k->name, r->name) == 0, "%s: name", r->idname);
        CHECK(k->rounded == r->rounded && k->n_in == r->n_in && k->n_out == r->n_out && k->n_iarg == r->n_iarg &&
                  k->n_farg == r->n_farg,
              "%s: counts", r->idname);
        CHECK(k->family == r->family && k->red == r->red && k->device == r->dev, "%s: family, axes, device",
              r->idname);
        CHECK(strcmp(k->iargs, r->iargs) == 0 && strcmp(k->fargs, r->fargs) == 0 && strcmp(k->impl, r->stem) == 0,
              "%s: argument names and stem", r->idname);
        CHECK(k->check && k->exec && k->cost, "%s: check, exec and cost", r->idname);
        /* the backward facet: a rule, `fused` or `none` (vt_grad_fn); a kind that computes a
         * backward or an update (its name says so, or it is an optimiser's) is never differentiated */
        CHECK(k->grad && strcmp(k->grad_stem, r->grad) == 0, "%s: backward facet", r->idname);
        if (k->grad) {
            vt_grad_rule g = k->grad(NULL, NULL, 1, NULL, VT_GRAD_QUERY, "");
            int nd = strcmp(r->grad, "none") == 0, fu = strcmp(r->grad, "fused") == 0;
            CHECK(nd == (g == VT_GRAD_NOT) && (fu == (g == VT_GRAD_FUSED) || (!fu && g != VT_GRAD_NOT)),
                  "%s: the facet \"%s\" answers %d", r->idname, r->grad, (int)g);
            CHECK(!(strstr(r->name, "backward") || strstr(r->name, "_grad") || strstr(r->name, "gradient") ||
                    r->family == VT_FAM_LOADER || strstr(r->name, "adam") || strstr(r->name, "sgd")) || nd,
                  "%s: a backward, loader or optimiser kind has the facet none", r->idname);
        }
        CHECK(vt_plain_has_kind((uint16_t)r->id), "%s: plain form", r->idname);
        CHECK(vt_kind_rounded(r->id) == r->rounded && vt_kind_device(r->id) == (vt_kind_dev)r->dev,
              "%s: the device's facts", r->idname);
        /* every facet present and consistent */
        CHECK(r->family >= VT_FAM_LOADER && r->family <= VT_FAM_GEMM, "%s: family", r->idname);
        CHECK(r->red >= VT_RED_NONE && r->red <= VT_RED_GEMM_K, "%s: reduction axes", r->idname);
        CHECK(r->dev >= VT_DEV_ITEM && r->dev <= VT_DEV_CPU, "%s: device", r->idname);
        CHECK(words(r->iargs) == (unsigned)r->n_iarg && words(r->fargs) == (unsigned)r->n_farg,
              "%s: %d integer and %d real arguments, named \"%s\" and \"%s\"", r->idname, r->n_iarg, r->n_farg,
              r->iargs, r->fargs);
        CHECK(r->n_out >= 1 && r->n_out <= VT_MAX_OP_OUTPUTS && (r->n_in == VT_VARIADIC || r->n_in <= 8),
              "%s: counts in range", r->idname);
        CHECK(r->family != VT_FAM_LOADER || r->n_in == 0, "%s: a loader reads no tensor", r->idname);
        CHECK((r->family != VT_FAM_LOADER && r->family != VT_FAM_MOVE) || !r->rounded, "%s: loaders and moves are exact",
              r->idname);
        CHECK((r->family != VT_FAM_REDUCE && r->family != VT_FAM_ROWWISE && r->family != VT_FAM_GEMM) || r->rounded,
              "%s: sums are rounded", r->idname);
        CHECK((r->red == VT_RED_NONE) == (r->family != VT_FAM_REDUCE && r->family != VT_FAM_ROWWISE &&
                                          r->family != VT_FAM_GEMM),
              "%s: the kinds that sum are the reductions, the row-wise kinds and the GEMMs", r->idname);
        CHECK(r->red != VT_RED_GEMM_K || r->id == VT_OPK_MATMUL, "%s: only the GEMM's axes depend on transA", r->idname);
        /* the GEMM pipeline runs GEMMs; a GEMM it does not run (the convolutions of step program 2) is the host's */
        CHECK(r->dev != VT_DEV_GEMM || r->family == VT_FAM_GEMM, "%s: the GEMM pipeline runs GEMMs", r->idname);
        CHECK(r->family != VT_FAM_GEMM || r->dev == VT_DEV_GEMM || r->dev == VT_DEV_CPU,
              "%s: a GEMM runs in the GEMM pipeline or on the host", r->idname);
        /* what vt_dev_op_make and vt_dev_op holds: 1..6 inputs, 1..3 outputs, 4 real arguments */
        CHECK(r->dev != VT_DEV_ITEM || (r->n_in >= 1 && r->n_in <= 6 && r->n_out <= 3 && r->n_farg <= 4),
              "%s: a device item's counts", r->idname);
        for (size_t j = 0; j < i; j++) {
            CHECK(strcmp(LIST[j].name, r->name) != 0, "%s: name \"%s\" also %s's", r->idname, r->name, LIST[j].idname);
            CHECK(strcmp(LIST[j].idname, r->idname) != 0, "%s twice", r->idname);
        }
    }
}

static void *dummy_ptr(void *ctx, uint32_t t)
{
    static double cell[8];
    (void)ctx, (void)t;
    return cell;
}

static void check_ops(const char *what, vt_model *m, unsigned *seen);

/* SUB's exec on the program of check_extra (operation 1: y = a - b, n elements): in both rounding
 * modes every element is RN32 of the exact difference (the exact accumulator, which SUB itself
 * never uses), including differences that round to a tie and across the whole exponent range;
 * its plain form in both precisions computes a - b in that precision. */
static void check_sub(vt_model *m)
{
    const vt_program *p = &m->prog;
    const vt_opdesc *o = &p->op[1];
    const size_t n = p->t[o->out[0]].n;
    float a[64], b[64], y[64];
    double x64[64], pa[64], pb[64], py[64];
    vt_rng rng = {20261202};
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)vt_rng_next(&rng), v = (uint32_t)vt_rng_next(&rng);
        memcpy(&a[i], &u, 4), memcpy(&b[i], &v, 4);
        if (!isfinite(a[i])) a[i] = 1.0f;
        if (!isfinite(b[i])) b[i] = -0.0f;
    }
    a[0] = 1.0f, b[0] = 0x1p-25f;                 /* 1 - 2^-25: a tie, to even (1) */
    a[1] = 1.0f, b[1] = 0x1.8p-25f;               /* just past the tie: 1 - 2^-24 */
    a[2] = 0x1p-149f, b[2] = -0x1p-149f;          /* subnormals */
    a[3] = 0x1.fffffep127f, b[3] = -0x1p102f;     /* rounds down to the largest float */
    a[4] = 3.0f, b[4] = 3.0f;                     /* +0 */
    uint8_t *arena[VT_TC_COUNT] = {0};
    arena[VT_TC_INPUT] = (uint8_t *)a, arena[VT_TC_ACT] = (uint8_t *)b, arena[VT_TC_GRAD] = (uint8_t *)y;
    for (int mode = 0; mode < 2; mode++) {
        vt_rctx rctx;
        vt_steplog log;
        vt_steplog_init(&log, 1);
        vt_rctx_init(&rctx, VT_RMODE_RECORD,
                     (vt_bound_cfg){.mode = VT_BOUND_PROVABLE, .rounding = mode ? VT_ROUNDING_LOG : VT_ROUNDING_EXACT});
        CHECK_OK(vt_rctx_begin_step(&rctx, 1, &log));
        vt_opctx c;
        memset(&c, 0, sizeof c);
        c.prog = p, c.arena = arena, c.o = o, c.op_id = 1, c.step = 1, c.rctx = &rctx, c.s.x64 = x64;
        vt_err e = vt_opkind_get(VT_OPK_SUB)->exec(&c);
        CHECK(e == VT_OK, "SUB mode %d: %s", mode, vt_errmsg());
        for (size_t i = 0; i < n && e == VT_OK; i++) {
            vt_xacc x;
            vt_xacc_init(&x);
            vt_xacc_add(&x, (double)a[i]);
            vt_xacc_add(&x, -(double)b[i]);
            float want = vt_xacc_round32(&x);
            CHECK(memcmp(&want, &y[i], 4) == 0, "SUB mode %d element %zu: %a - %a = %a, expected %a", mode, i,
                  (double)a[i], (double)b[i], (double)y[i], (double)want);
        }
        vt_steplog_free(&log);
    }
    /* the plain forms: F32 tensors held as float, then as double */
    const size_t off[3] = {0, 0, 0};
    vt_plainctx pc = {p, arena, off, 0, o, 1, NULL, NULL, NULL};
    CHECK_OK(vt_opkind_get(VT_OPK_SUB)->plain(&pc));
    for (size_t i = 5; i < n; i++) CHECK(y[i] == a[i] - b[i], "SUB plain FP32 element %zu", i);
    for (size_t i = 0; i < n; i++) pa[i] = a[i], pb[i] = b[i];
    arena[VT_TC_INPUT] = (uint8_t *)pa, arena[VT_TC_ACT] = (uint8_t *)pb, arena[VT_TC_GRAD] = (uint8_t *)py;
    pc.f64 = 1;
    CHECK_OK(vt_opkind_get(VT_OPK_SUB)->plain(&pc));
    for (size_t i = 0; i < n; i++) CHECK(py[i] == pa[i] - pb[i], "SUB plain FP64 element %zu", i);
}

/* every operation of the recipe's program (the step and the evaluation pass) */
static void check_program(const char *what, const char *file, const char *const *sets, unsigned *seen)
{
    vt_recipe rcp;
    vt_recipe_default(&rcp);
    if (file) CHECK_OK(vt_recipe_load_file(&rcp, file));
    if (!sets) CHECK_OK(vt_probe_transformer_recipe(&rcp)); /* sets NULL: the probe's transformer */
    for (int i = 0; sets && sets[i]; i++) CHECK_OK(vt_recipe_set(&rcp, sets[i]));
    vt_model *m = calloc(1, sizeof *m);
    if (!m || vt_program_build(&rcp, &m->prog) != VT_OK) {
        CHECK(0, "%s: the program: %s", what, vt_errmsg());
        free(m);
        return;
    }
    check_ops(what, m, seen);
    vt_program_free(&m->prog);
    free(m);
}

/* the kinds no architecture uses, in a hand-built program: SUB */
static void check_extra(unsigned *seen)
{
    vt_model *m = calloc(1, sizeof *m);
    CHECK(m != NULL, "memory");
    if (!m) return;
    vt_program *p = &m->prog;
    const uint32_t n = 64, shape[1] = {n};
    uint32_t ta = vt_prog_tensor(p, VT_TC_INPUT, VT_DT_F32, 1, shape, "a");
    uint32_t tb = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 1, shape, "b");
    uint32_t ty = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 1, shape, "y");
    const uint32_t in[2] = {ta, tb}, out[1] = {ty};
    uint32_t op = vt_prog_op(p, VT_OPK_SUB, in, 2, out, 1, NULL, 0, NULL, 0, "a - b");
    CHECK(op == 1 && p->n_ops == 1, "the SUB program: %s", vt_errmsg());
    if (op == 1) {
        check_ops("extra", m, seen);
        check_sub(m);
    }
    vt_program_free(&m->prog);
    /* the losses and the targets' loader, in the known-answer probe's program of them */
    memset(m, 0, sizeof *m);
    vt_err e = vt_probe_losses_program(&m->prog, 4, 3);
    CHECK(e == VT_OK, "the losses' program: %s", vt_errmsg());
    if (e == VT_OK) check_ops("losses", m, seen);
    vt_program_free(&m->prog);
    /* the layout moves, in the known-answer probe's program of them */
    memset(m, 0, sizeof *m);
    e = vt_probe_layouts_program(&m->prog, 2, 6, 3);
    CHECK(e == VT_OK, "the layouts' program: %s", vt_errmsg());
    if (e == VT_OK) check_ops("layouts", m, seen);
    vt_program_free(&m->prog);
    free(m);
}

/* every operation of m's program: its check, refusals with counts off by one, the device's
 * acceptance, the batch reductions' operands */
static void check_ops(const char *what, vt_model *m, unsigned *seen)
{
    const vt_program *p = &m->prog;
    vt_rctx rx;
    memset(&rx, 0, sizeof rx);
    rx.bound.rounding = VT_ROUNDING_EXACT;
    for (uint32_t j = 1; j <= p->n_ops + p->n_eval; j++) {
        const vt_opdesc *o = &p->op[j];
        const vt_opkind *k = vt_opkind_get(o->kind);
        CHECK(k != NULL, "%s op %u: kind %u", what, j, o->kind);
        if (!k) continue;
        seen[o->kind]++;
        CHECK_OK(vt_op_check(p, o));
        vt_opdesc bad = *o;
        bad.n_iarg++;
        CHECK(vt_op_check(p, &bad) != VT_OK, "%s op %u (%s): one integer argument too many", what, j, k->name);
        bad = *o, bad.n_farg++;
        CHECK(vt_op_check(p, &bad) != VT_OK, "%s op %u (%s): one real argument too many", what, j, k->name);
        bad = *o, bad.n_out++;
        CHECK(vt_op_check(p, &bad) != VT_OK, "%s op %u (%s): one output too many", what, j, k->name);
        /* the device takes exactly its item kinds (sizes here are far below its limits) */
        vt_dev_op d;
        int dev = vt_dev_op_make(m, &rx, j, 1, dummy_ptr, NULL, &d);
        CHECK(dev == (k->device == VT_DEV_ITEM), "%s op %u (%s): the device %s it", what, j, k->name,
              dev ? "takes" : "refuses");
        if (dev) CHECK(d.n_items > 0 && (d.rounded_n > 0) == (k->rounded != 0), "%s op %u (%s): items %zu, rounded %llu",
                       what, j, k->name, d.n_items, (unsigned long long)d.rounded_n);
        /* a reduction over the batch reads the rows of a batch-major tensor: no state */
        if (vt_op_batch_reduction(o)) {
            const vt_tensor *a = &p->t[o->in[0]];
            CHECK(a->cls >= VT_TC_INPUT, "%s op %u (%s): sums over the batch of %s (class %u)", what, j, k->name,
                  a->name, a->cls);
            if (o->kind == VT_OPK_MATMUL)
                CHECK(a->shape[0] == (uint64_t)o->iarg[4], "%s op %u: transA: K is A's rows", what, j);
        }
    }
}

int main(void)
{
    check_list();
    unsigned seen[VT_OPK_COUNT] = {0};
    static const char *const mlp[] = {"dataset=digits", "layers=[64,16,10]", "batch=8", NULL};
    static const char *const mlp_adam[] = {"dataset=digits", "layers=[64,16,10]", "batch=8", "optimizer=adam", NULL};
    static const char *const cnn[] = {"subset=256", "resnet_width=4", "resnet_stages=2", "batch=4", NULL};
    static const char *const cnn2[] = {"subset=256", "resnet_width=4", "resnet_stages=2", "batch=4",
                                       "program_version=2", NULL};
    static const char *const gpt[] = {"gpt_layers=1", "gpt_heads=2", "gpt_width=16", "gpt_context=8", "batch=2",
                                      "dropout=0.1", NULL};
    check_program("mlp", NULL, mlp, seen);
    check_program("mlp adam", NULL, mlp_adam, seen);
    check_program("resnet", "recipes/resnet-cifar10.json", cnn, seen);
    check_program("resnet program 2", "recipes/resnet-cifar10.json", cnn2, seen);
    check_program("gpt", "recipes/gpt-shakespeare.json", gpt, seen);
    check_program("transformer", NULL, NULL, seen);
    check_extra(seen);
    for (size_t i = 0; i < N_LIST; i++)
        CHECK(seen[LIST[i].id] > 0, "%s occurs in none of the programs", LIST[i].idname);
    return vt_test_finish("test_kinds");
}
