/* vt_plain.c - the step program run plainly in FP32 or FP64 (benchmark baseline; vt_plain.h).
 *
 * The plain form of each operation kind lives beside its check and exec in its family's file
 * (ops/vt_fam_<family>.c: vti_<stem>_plain, the kind's entry's `plain`), written once for a scalar
 * type T that VTI_PLAIN_BOTH (ops/vt_ops_int.h) instantiates as float (cblas_sgemm, expf, ...) and
 * as double (cblas_dgemm, exp, ...). This file holds the interpreter: the same program as vt_model,
 * the same operation order, its own layout (F32 tensors as float or double), the data order.
 */

#include "vt_plain.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/vt_ops.h"
#include "../ops/vt_philox.h"
#include "vt_model.h"

static void *TP(vt_plain *p, uint32_t t) { return p->arena[p->prog.t[t].cls] + p->off[t]; }

/* Batch of step s (1-based), exactly as vt_model_batch_indices. */
static void batch_indices(vt_plain *p, uint64_t s)
{
    uint64_t B = p->rcp.batch, spe = p->n_examples / B;
    uint64_t e = (s - 1) / spe, q = (s - 1) % spe;
    if (p->perm_epoch != e + 1) {
        vt_shuffle(p->perm, (uint32_t)p->n_examples, p->rcp.seed, VT_RNG_SHUFFLE, e);
        p->perm_epoch = e + 1;
    }
    for (uint64_t i = 0; i < B; i++) p->batch_idx[i] = p->perm[q * B + i];
}

static vt_plainctx ctx_of(vt_plain *p, const vt_dataset *ds, uint64_t s, const vt_opdesc *o)
{
    return (vt_plainctx){&p->prog, p->arena, p->off, p->fp64, o, s, ds, p->batch_idx, p->be};
}

/* ----------------------------------------------------------- public */

int vt_plain_has_kind(uint16_t kind)
{
    const vt_opkind *k = vt_opkind_get(kind);
    return k && k->plain;
}

vt_err vt_plain_init(vt_plain *p, const vt_recipe *rcp, size_t n_examples, int fp64)
{
    memset(p, 0, sizeof *p);
    VT_RETURN_ERROR_IF(n_examples < rcp->batch || n_examples > UINT32_MAX, VT_ERR_ARG,
                       "the dataset has %zu examples; the batch needs %u", n_examples, rcp->batch);
    VT_FORWARD_IF_ERROR(vt_program_build(rcp, &p->prog));
    p->rcp = *rcp;
    p->fp64 = fp64 != 0;
    p->esz = p->fp64 ? sizeof(double) : sizeof(float);
    p->n_examples = n_examples;
    const vt_program *g = &p->prog;
    size_t bytes[VT_TC_COUNT] = {0};
    p->off = calloc(g->n_tensors, sizeof *p->off);
    int bad = !p->off;
    for (uint32_t t = 0; t < g->n_tensors && !bad; t++) {
        const vt_tensor *d = &g->t[t];
        size_t esz = d->dtype == VT_DT_F32 ? p->esz : vt_dtype_size((vt_dtype)d->dtype);
        p->off[t] = (bytes[d->cls] + 63) & ~(size_t)63;
        bytes[d->cls] = p->off[t] + d->n * esz;
    }
    for (uint32_t t = 0; t < g->n_ops + g->n_eval && !bad; t++) bad = !vt_plain_has_kind(g->op[t + 1].kind);
    for (int c = 0; c < VT_TC_COUNT && !bad; c++) bad = (p->arena[c] = calloc(bytes[c] ? bytes[c] : 1, 1)) == NULL;
    p->batch_idx = bad ? NULL : calloc(rcp->batch, sizeof *p->batch_idx);
    p->perm = bad ? NULL : calloc(n_examples, sizeof *p->perm);
    if (bad || !p->batch_idx || !p->perm) {
        vt_plain_free(p);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory allocating the plain model (or an operation without a plain form)");
    }
    /* the verifiable model's initial FP32 values */
    for (uint32_t t = 0; t < g->n_state; t++)
        for (size_t k = 0; k < g->t[t].n; k++) {
            float w = vt_program_initial_value(g, rcp->seed, t, k);
            if (p->fp64) ((double *)TP(p, t))[k] = w;
            else ((float *)TP(p, t))[k] = w;
        }
    return VT_OK;
}

void vt_plain_free(vt_plain *p)
{
    for (int c = 0; c < VT_TC_COUNT; c++) free(p->arena[c]);
    free(p->off);
    free(p->batch_idx);
    free(p->perm);
    vt_program_free(&p->prog);
    memset(p, 0, sizeof *p);
}

static vt_err run_ops(vt_plain *p, const vt_dataset *ds, uint64_t s, uint32_t from, uint32_t to)
{
    for (uint32_t j = from; j <= to; j++) {
        const vt_opdesc *o = &p->prog.op[j];
        if (o->kind == VT_OPK_LOAD_BATCH || o->kind == VT_OPK_LOAD_BATCH_TARGETS) batch_indices(p, s);
        vt_plainctx c = ctx_of(p, ds, s, o);
        VT_FORWARD_IF_ERROR(vt_opkind_get(o->kind)->plain(&c));
    }
    return VT_OK;
}

void *vt_plain_tensor(vt_plain *p, uint32_t t) { return t < p->prog.n_tensors ? TP(p, t) : NULL; }

vt_err vt_plain_run(vt_plain *p, const vt_dataset *ds, uint64_t step, uint32_t from, uint32_t to)
{
    VT_RETURN_ERROR_IF(from < 1 || to > p->prog.n_ops + p->prog.n_eval || step < 1, VT_ERR_ARG,
                       "vt_plain_run: no operations %u..%u", from, to);
    return run_ops(p, ds, step, from, to);
}

vt_err vt_plain_step(vt_plain *p, const vt_dataset *ds, double *loss)
{
    VT_RETURN_ERROR_IF(p->arena[0] == NULL, VT_ERR_ARG, "vt_plain_step: model not initialised");
    VT_RETURN_ERROR_IF(ds->n != p->n_examples || (!ds->text && ds->d != p->prog.t[p->prog.input].shape[1]), VT_ERR_ARG,
                       "dataset shape (%zu x %u) does not fit the model", ds->n, ds->d);
    uint64_t s = p->step + 1;
    VT_FORWARD_IF_ERROR(run_ops(p, ds, s, 1, p->prog.n_ops));
    const void *lp = TP(p, p->prog.loss);
    double l = p->fp64 ? *(const double *)lp : (double)*(const float *)lp;
    if (loss) *loss = l;
    VT_RETURN_ERROR_IF(!isfinite(l), VT_ERR_DIVERGED, "plain %s training diverged at step %llu (loss %g)",
                       p->fp64 ? "FP64" : "FP32", (unsigned long long)s, l);
    p->step = s;
    return VT_OK;
}

typedef struct {
    vt_plain *p;
    const vt_dataset *ds;
} eval_ctx;

static vt_err eval_fwd(void *ctx, const size_t *idx, size_t B)
{
    eval_ctx *c = ctx;
    memcpy(c->p->batch_idx, idx, B * sizeof *idx);
    const vt_plainctx pc = ctx_of(c->p, c->ds, 1, NULL);
    VT_FORWARD_IF_ERROR(vt_plain_rows(&pc, c->p->prog.input, NULL));
    uint32_t first, last;
    vt_program_eval_range(&c->p->prog, &first, &last);
    return run_ops(c->p, c->ds, 1, first, last);
}

static double eval_prob(void *ctx, size_t i)
{
    eval_ctx *c = ctx;
    const void *pr = TP(c->p, c->p->prog.probs);
    return c->p->fp64 ? ((const double *)pr)[i] : ((const float *)pr)[i];
}

/* the program's forward pass on batches of the evaluation set (vt_program_evaluate) */
vt_err vt_plain_accuracy(vt_plain *p, const vt_dataset *ds, size_t max_examples, double *acc)
{
    eval_ctx c = {p, ds};
    return vt_program_evaluate(&p->prog, ds, max_examples, eval_fwd, eval_prob, &c, acc);
}
