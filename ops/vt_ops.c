/* vt_ops.c - the operation kinds' table KINDS, generated from the list (vt_kinds.h), the
 * program-time check of one operation (vt_op_check) and the helpers every family file shares
 * (vt_ops_int.h). The kinds themselves live in their family's file, vt_fam_<family>.c. */
#include "vt_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_par.h"
#include "../rounding/vt_elem.h"
#include "../rounding/vt_eval.h"
#include "../rounding/vt_tight.h"
#include "vt_ops_int.h"

vt_err vti_op_want(const vt_program *p, const vt_opdesc *o, uint32_t id, vt_dtype dt, size_t n, const char *what)
{
    const vt_tensor *t = T(p, id);
    VT_RETURN_ERROR_IF(t->dtype != dt || t->n != n, VT_ERR_INTERNAL,
                       "program: operation \"%s\": %s %s is %s with %zu elements, expected %s with %zu", o->name, what,
                       t->name, vt_dtype_name((vt_dtype)t->dtype), t->n, vt_dtype_name(dt), n);
    return VT_OK;
}

typedef struct {
    const vt_opctx *c;
    const void *arg;
    vti_chain_part part;
} chain_job;

static void chain_part(void *ctx, size_t lo, size_t hi, int k)
{
    const chain_job *j = ctx;
    (void)k;
    j->part(j->c, j->arg, lo, hi);
}

void vti_chain_run(const vt_opctx *c, size_t n, size_t cols, vti_chain_part part, const void *arg)
{
    (void)vt_par_for(n, VTI_CHAIN_GRAIN / (cols ? cols : 1) + 1, chain_part, &(chain_job){c, arg, part});
}

typedef struct {
    const vt_opctx *c;
    const void *arg;
    vti_chain_part part;
    size_t cols;
    float *out;
    int bad[VT_PAR_MAX];
} chain_round_job;

/* a part's items in blocks of about VTI_CHAIN_GRAIN elements, each converted to FP32 right after
 * its values are formed, while they are in the cache */
static void chain_round_part(void *ctx, size_t lo, size_t hi, int k)
{
    chain_round_job *j = ctx;
    const size_t cols = j->cols, step = VTI_CHAIN_GRAIN / cols + 1;
    int bad = 0;
    for (size_t s = lo; s < hi; s += step) {
        const size_t e = hi - s < step ? hi : s + step;
        j->part(j->c, j->arg, s, e);
        bad |= vt_round_convert(j->c->s.x64 + s * cols, (e - s) * cols, j->out + s * cols);
    }
    j->bad[k] = bad;
}

vt_err vti_chain_round(vt_opctx *c, size_t n, size_t cols, vti_chain_part part, const void *arg, float *out)
{
    if (!cols) cols = 1;
    /* log rounding checks the operation against the log before it writes out (a replayed log that does
     * not match leaves out as it was, an optimiser's state updated in place included): its values first */
    if (c->rctx->bound.rounding != VT_ROUNDING_EXACT) {
        vti_chain_run(c, n, cols, part, arg);
        return vt_round(c->rctx, c->op_id, c->s.x64, NULL, n, cols, out);
    }
    chain_round_job j = {.c = c, .arg = arg, .part = part, .cols = cols, .out = out};
    const int parts = vt_par_for(n, VTI_CHAIN_GRAIN / cols + 1, chain_round_part, &j);
    int bad = 0;
    for (int k = 0; k < parts; k++) bad |= j.bad[k];
    return vt_round_converted(c->rctx, c->op_id, c->s.x64, n, cols, out, bad);
}

void vti_cost_elementwise(const vt_program *p, const vt_opdesc *o, double flop_per, vt_opcost *out)
{
    double n = (double)T(p, o->out[0])->n, bytes = 0;
    for (uint32_t k = 0; k < o->n_in; k++) bytes += (double)T(p, o->in[k])->n * vt_dtype_size((vt_dtype)T(p, o->in[k])->dtype);
    for (uint32_t k = 0; k < o->n_out; k++) bytes += (double)T(p, o->out[k])->n * 4;
    out->flop = flop_per * n;
    out->bytes = bytes;
    out->scratch = n * o->n_out;
    out->norms = 0;
}

/* ------------------------------------------------------------ checks and costs the families share */

vt_err vti_same_n_check(const vt_program *p, const vt_opdesc *o)
{
    size_t n = T(p, o->out[0])->n;
    for (uint32_t k = 0; k < o->n_in; k++) VT_FORWARD_IF_ERROR(want(p, o, o->in[k], VT_DT_F32, n, "input"));
    return want(p, o, o->out[0], VT_DT_F32, n, "output");
}

vt_err vti_op_rows(const vt_program *p, const vt_opdesc *o, vt_tensor const **x)
{
    *x = T(p, o->in[0]);
    VT_RETURN_ERROR_IF((*x)->rank != 2 || (*x)->dtype != VT_DT_F32, VT_ERR_INTERNAL,
                       "program: \"%s\": input is not [N, C] F32", o->name);
    return VT_OK;
}

vt_err vti_labels_ok(size_t N, size_t C, const uint8_t *y)
{
    for (size_t i = 0; i < N; i++) VT_RETURN_ERROR_IF(y[i] >= C, VT_ERR_ARG, "label %u of example %zu is not a class", y[i], i);
    return VT_OK;
}

/* ------------------------------------------------------------ sums over a split batch */

static vt_err dist_fail(vt_opctx *c, vt_err e, const vt_elem_fault *f)
{
    char msg[400];
    snprintf(msg, sizeof msg, "%s", vt_errmsg());
    if (f && e == VT_ERR_DIVERGED)
        return vt_set_error(e, "step %llu, operation %u (%s), element %llu: %s", (unsigned long long)c->step, c->op_id,
                            c->o->name, (unsigned long long)f->index, msg);
    return vt_set_error(e, "step %llu, operation %u (%s): %s", (unsigned long long)c->step, c->op_id, c->o->name, msg);
}

/* n elements rounded across the ranks (vt_round_dist_refined: refine may be NULL), the shard's and
 * the context's counters added to */
static vt_err round_batch(vt_opctx *c, const double *x, const double *bound, size_t n, vt_round_dist_refine refine,
                          int resum, vt_round_dist_terms terms, void *arg, float *out)
{
    vt_round_dist_stats st;
    memset(&st, 0, sizeof st);
    vt_elem_fault f;
    memset(&f, 0, sizeof f);
    vt_err e = vt_round_dist_refined(c->shard->comm, n, x, bound, refine, resum, terms, arg, out, &st, &f);
    c->shard->n_dist += st.n, c->shard->n_dist_exact += st.n_exact;
    c->shard->bytes_sent += st.bytes_gather + st.bytes_refine + st.bytes_reduce;
    c->rctx->stats.rounded += st.n, c->rctx->stats.exact += st.n_exact;
    return e ? dist_fail(c, e, &f) : VT_OK;
}

vt_err vti_round_batch_terms(vt_opctx *c, const double *x, const double *bound, size_t n, vt_round_dist_terms terms,
                             void *arg, float *out)
{
    return round_batch(c, x, bound, n, NULL, 0, terms, arg, out);
}

typedef struct {
    const vt_bounds *b;
    const double *x;
    size_t cols;
    uint64_t n_exact, n_kulisch;
    const vt_bound_cfg *cfg; /* the refinement (short GEMM reductions): the tight bound's cache */
    vt_tight *tc;
} bounds_arg;

/* the refinement round (vt_round_dist_refined) of a short GEMM reduction: this rank's tight bound of
 * element i, for the same partial */
static double bounds_refine(void *arg, size_t i, double *p)
{
    (void)p;
    bounds_arg *t = arg;
    return vt_tight_bound(t->cfg, t->tc, i / t->cols, i % t->cols);
}

static int never_decides(double s, double e, void *ctx)
{
    (void)s, (void)e, (void)ctx;
    return 0;
}

/* the compensated stage's sum and bound, whatever they are */
static int take_comp(double s, double e, void *ctx)
{
    double *q = ctx;
    q[0] = s, q[1] = e;
    return 1;
}

/* the refinement round of any other reduction with an exact evaluator: a new partial, this rank's
 * compensated sum of its terms, with its rigorous bound (the exact evaluation's first stage, which
 * one process runs for the elements its screen leaves undecided); where that is not finite, the
 * exact sum rounded to FP64 (|X - RN64(X)| <= 2^-53 |RN64(X)|, plus the subnormal spacing) */
static double bounds_resum(void *arg, size_t i, double *p)
{
    bounds_arg *t = arg;
    if (t->b->kind == VT_BOUNDS_ZERO || !t->b->xa) return NAN;
    double q[2];
    vt_xacc a;
    if (vt_eval_element(t->b, NULL, i / t->cols, i % t->cols, take_comp, q, &a, &t->n_exact, &t->n_kulisch)) {
        *p = q[0];
        return q[1];
    }
    double v = vt_xacc_round64(&a);
    if (!isfinite(v)) return NAN;
    *p = v;
    return fabs(v) * 0x1p-53 + 0x1p-1074;
}

/* this rank's terms of element i: the reduction its exact evaluator names (an exact partial: x) */
static vt_err bounds_terms(void *arg, size_t i, vt_xacc *acc)
{
    bounds_arg *t = arg;
    if (t->b->kind == VT_BOUNDS_ZERO) {
        vt_xacc_add(acc, t->x[i]);
        return VT_OK;
    }
    VT_RETURN_ERROR_IF(!t->b->xa, VT_ERR_UNSUPPORTED, "the operation has no exact evaluator");
    (void)vt_eval_element(t->b, NULL, i / t->cols, i % t->cols, never_decides, NULL, acc, &t->n_exact, &t->n_kulisch);
    return VT_OK;
}

vt_err vti_round_batch(vt_opctx *c, const double *x, const vt_bounds *b, size_t rows, size_t cols, float *out)
{
    if (!c->shard) return vt_round(c->rctx, c->op_id, x, b, rows, cols, out);
    VT_RETURN_ERROR_IF(c->rctx->bound.rounding != VT_ROUNDING_EXACT, VT_ERR_UNSUPPORTED,
                       "a batch split over ranks is rounded exactly: rounding=log needs one rank");
    const vt_bounds zero = {.kind = VT_BOUNDS_ZERO};
    if (!b) b = &zero;
    size_t n = rows * cols;
    double *bound = malloc((n ? n : 1) * sizeof *bound);
    VT_RETURN_ERROR_IF(!bound, VT_ERR_NOMEM, "out of memory rounding a sum over the ranks");
    /* each element's bound: the screening bound (the cheap one); a short GEMM reduction's elements
     * that the owners' screen leaves undecided with it get the refinement round with this rank's
     * tight bound, as one process computes the tight bound only where its screen fails (its cost is
     * the GEMM's own at these lengths, and it spares most of the exact phase's integer exchange) */
    for (size_t i = 0; i < rows; i++)
        for (size_t j0 = 0; j0 < cols; j0 += VT_BLOCK) {
            size_t nb = cols - j0 < VT_BLOCK ? cols - j0 : VT_BLOCK;
            if (b->kind == VT_BOUNDS_ZERO) memset(bound + i * cols + j0, 0, nb * sizeof *bound);
            else vt_screen_bounds(b, i, j0, nb, cols, bound + i * cols + j0);
        }
    int tight = b->kind == VT_BOUNDS_OUTER && b->ta && b->K <= VT_MBLK_KMAX;
    vt_tight tc;
    if (tight) vt_tight_init(&tc, b, rows, cols);
    bounds_arg arg = {b, x, cols, 0, 0, &c->rctx->bound, tight ? &tc : NULL};
    /* a short GEMM reduction refines its bounds (4 bytes an element); any other reduction with an
     * exact evaluator its partials (the compensated sums: 12 bytes) */
    int resum = !tight && b->kind != VT_BOUNDS_ZERO && b->xa;
    vt_err e = round_batch(c, x, bound, n, tight ? bounds_refine : resum ? bounds_resum : NULL, resum, bounds_terms,
                           &arg, out);
    if (tight) vt_tight_free(&tc);
    free(bound);
    return e;
}

/* ------------------------------------------------------------ the table */

/* generated from the list (vt_kinds.h): one entry per kind, its functions named by its stem */
static const vt_opkind KINDS[VT_OPK_COUNT] = {
#define VTI_KIND_ROW(ID, nm, fam, rd, ni, no, nia, nfa, ia, fa, rx, dev, st, gr)                                           \
    [VT_OPK_##ID] = {.name = nm, .rounded = rd, .n_in = ni, .n_out = no, .n_iarg = nia, .n_farg = nfa,                 \
                     .family = VT_FAM_##fam, .red = VT_RED_##rx, .device = VT_DEV_##dev, .iargs = ia, .fargs = fa,    \
                     .impl = #st, .check = vti_##st##_check, .exec = vti_##st##_exec, .cost = vti_##st##_cost,       \
                     .plain = vti_##st##_plain, .grad_stem = #gr, .grad = vti_##gr##_grad},
    VT_KINDS(VTI_KIND_ROW)
#undef VTI_KIND_ROW
};

vt_grad_rule vti_grad_pair(vt_program *p, uint16_t bk, const vt_opdesc *o, int from_output, const uint32_t *dy,
                           uint32_t dx, const char *layer)
{
    if (dx != VT_GRAD_QUERY)
        vt_prog_op(p, bk, (const uint32_t[]){from_output ? o->out[0] : o->in[0], dy[0]}, 2, &dx, 1, o->iarg, o->n_iarg,
                   o->farg, o->n_farg, "%s backward", layer);
    return VT_GRAD_OPS;
}

/* the backward facets of the kinds that have no rule of their own (vt_grad_fn, vt_ops.h) */
vt_grad_rule vti_none_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                           const char *layer)
{
    (void)p, (void)o, (void)i, (void)dy, (void)dx, (void)layer;
    return VT_GRAD_NOT;
}

vt_grad_rule vti_fused_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                            const char *layer)
{
    (void)p, (void)o, (void)i, (void)dy, (void)dx, (void)layer;
    return VT_GRAD_FUSED;
}

const vt_opkind *vt_opkind_get(uint16_t kind)
{
    return kind >= 1 && kind < VT_OPK_COUNT ? &KINDS[kind] : NULL;
}

int vt_op_batch_reduction(const vt_opdesc *o)
{
    const vt_opkind *k = vt_opkind_get(o->kind);
    return k && (k->red == VT_RED_BATCH || (k->red == VT_RED_GEMM_K && o->n_iarg >= 1 && o->iarg[0] == 1));
}

vt_err vt_op_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_opkind *k = vt_opkind_get(o->kind);
    VT_RETURN_ERROR_IF(!k, VT_ERR_INTERNAL, "program: operation \"%s\" has unknown kind %u", o->name, o->kind);
    VT_RETURN_ERROR_IF((k->n_in == VT_VARIADIC ? o->n_in < 1 : o->n_in != k->n_in) || o->n_out != k->n_out ||
                           o->n_iarg != k->n_iarg || o->n_farg != k->n_farg,
                       VT_ERR_INTERNAL, "program: operation \"%s\" (%s) has the wrong number of inputs, outputs or arguments",
                       o->name, k->name);
    VT_RETURN_ERROR_IF(o->n_out < 1 || o->n_out > VT_MAX_OP_OUTPUTS, VT_ERR_INTERNAL,
                       "program: operation \"%s\" has %u outputs (1..%d)", o->name, o->n_out, VT_MAX_OP_OUTPUTS);
    for (uint32_t i = 0; i < o->n_in; i++)
        VT_RETURN_ERROR_IF(o->in[i] >= p->n_tensors, VT_ERR_INTERNAL, "program: \"%s\": input %u is no tensor", o->name, i);
    for (uint32_t i = 0; i < o->n_out; i++)
        VT_RETURN_ERROR_IF(o->out[i] >= p->n_tensors, VT_ERR_INTERNAL, "program: \"%s\": output %u is no tensor", o->name,
                           i);
    return k->check(p, o);
}
