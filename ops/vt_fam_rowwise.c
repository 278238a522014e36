/* vt_fam_rowwise.c - the row-wise kinds: softmax and the causal softmax, each row correctly rounded
 * as a whole (vt_softmax in kernels/vt_kernels.h; the causal softmax's rows through vt_gpt_hd.h, run and
 * rounded by vti_chain_round).
 * Each kind's check, exec and cost, named by its stem in the list (vt_kinds.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../kernels/vt_gpt_hd.h"
#include "../kernels/vt_kernels.h"
#include "../kernels/vt_math.h"
#include "vt_ops_int.h"

vt_err vti_softmax_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

vt_err vti_softmax_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_softmax(c->exec, x->shape[0], x->shape[1], IN(0), c->s.x64, c->s.b64, &bd));
    ROUND(c->s.x64, &bd, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_softmax_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 30, out); }

/* ------------------------------------------------------------ causal softmax */
/* SOFTMAX_CAUSAL: s [R, T] -> p; iarg T; farg scale. SOFTMAX_SCALED: the same over each whole row (no mask).
 * SOFTMAX_BWD: p, dp [R, T], S [R] -> dz (either's backward: a masked p is 0). */

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

/* rows of the causal softmax (vti_causal_softmax_row, the row's exponentials at once: vt_exp_n gives
 * the same bits) or of its backward pass */
static void causal_part(const vt_opctx *c, const void *arg, size_t r0, size_t r1)
{
    const size_t Tn = T(c->prog, c->o->in[0])->shape[1];
    const double scale = c->o->farg[0];
    const float *z = IN(0);
    (void)arg;
    if (c->o->kind == VT_OPK_SOFTMAX_BWD) {
        const float *dp = IN(1), *s = IN(2);
        for (size_t i = r0; i < r1; i++)
            for (size_t j = 0; j < Tn; j++)
                c->s.x64[i * Tn + j] = vti_softmax_backward1(z[i * Tn + j], dp[i * Tn + j], s[i], scale);
        return;
    }
    for (size_t i = r0; i < r1; i++) {
        size_t t = c->o->kind == VT_OPK_SOFTMAX_SCALED ? Tn - 1 : i % Tn; /* the last position the row sees */
        double *p = c->s.x64 + i * Tn;
        vti_causal_softmax_args(t, scale, z + i * Tn, p);
        vt_exp_n(t + 1, p, p);
        vti_normalise_row(t + 1, p);
        for (size_t j = t + 1; j < Tn; j++) p[j] = 0.0;
    }
}

vt_err vti_softmax_causal_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    return vti_chain_round(c, x->shape[0], x->shape[1], causal_part, NULL, OUT(0));
}

void vti_softmax_causal_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 30, out);
}

/* ------------------------------------------------------------ the plain forms (vt_plainctx) */

vt_err vti_softmax_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t N = SHAPE(0, 0), C = SHAPE(0, 1);
        const real *z = PX(0);
        real *pr = PY(0);
        for (size_t i = 0; i < N; i++) {
            const real *zi = z + i * C;
            real *pi = pr + i * C, m = zi[0], den = 0;
            for (size_t k = 1; k < C; k++)
                if (zi[k] > m) m = zi[k];
            for (size_t k = 0; k < C; k++) den += pi[k] = PEXP(zi[k] - m);
            for (size_t k = 0; k < C; k++) pi[k] = pi[k] / den;
        }
        return VT_OK;
    })
}

vt_err vti_softmax_causal_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const size_t R = SHAPE(0, 0), Tn = SHAPE(0, 1);
        const real sc = (real)c->o->farg[0];
        const real *z = PX(0);
        real *p = PY(0);
        for (size_t i = 0; i < R; i++) {
            size_t t = c->o->kind == VT_OPK_SOFTMAX_SCALED ? Tn - 1 : i % Tn;
            const real *zi = z + i * Tn;
            real *pi = p + i * Tn;
            if (c->o->kind == VT_OPK_SOFTMAX_BWD) {
                const real *dp = PX(1) + i * Tn, s = PX(2)[i];
                for (size_t j = 0; j < Tn; j++) pi[j] = sc * (zi[j] * (dp[j] - s));
                continue;
            }
            real m = sc * zi[0], den = 0;
            for (size_t j = 1; j <= t; j++)
                if (sc * zi[j] > m) m = sc * zi[j];
            for (size_t j = 0; j <= t; j++) den += pi[j] = PEXP(sc * zi[j] - m);
            for (size_t j = 0; j < Tn; j++) pi[j] = j <= t ? pi[j] / den : (real)0;
        }
        return VT_OK;
    })
}
