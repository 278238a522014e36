/* vt_ops_int.h - helpers shared by the files that implement operation kinds (vt_ops.c,
 * vt_ops_cnn.c), and the CNN kinds' entry points for the table in vt_ops.c. Not a public API. */
#ifndef VT_OPS_INT_H
#define VT_OPS_INT_H

#include "vt_model.h"
#include "vt_ops.h"

static inline const vt_tensor *T(const vt_program *p, uint32_t id) { return &p->t[id]; }

/* tensor id has dtype dt and n elements */
vt_err vt__op_want(const vt_program *p, const vt_opdesc *o, uint32_t id, vt_dtype dt, size_t n, const char *what);
#define want vt__op_want
/* input 0 is a rank-2 [N, C] FP32 tensor */
vt_err vt__op_rows(const vt_program *p, const vt_opdesc *o, vt_tensor const **x);
/* the cost of an elementwise operation: flop_per per output element, every tensor touched once */
void vt__cost_elementwise(const vt_program *p, const vt_opdesc *o, double flop_per, vt_opcost *out);
#define cost_elementwise vt__cost_elementwise
/* every input and the output are F32 with the output's element count */
vt_err vt__same_n_check(const vt_program *p, const vt_opdesc *o);

static inline float *vt__op_f(vt_opctx *c, const uint32_t *ids, uint32_t k)
{
    return vt_model_tensor(c->m, ids[k], NULL);
}
#define IN(k) vt__op_f(c, c->o->in, (k))
#define OUT(k) vt__op_f(c, c->o->out, (k))
#define NOUT(k) (c->m->prog.t[c->o->out[k]].n)
#define ROUND(xs, bnd, rows, cols, out) VT_FORWARD_IF_ERROR(vt_round(c->rc, c->op_id, (xs), (bnd), (rows), (cols), (out)))

/* the CNN kinds (vt_ops_cnn.c): check, exec, cost of each */
#define VT__KIND_DECL(k)                                                                                               \
    vt_err vt__##k##_check(const vt_program *p, const vt_opdesc *o);                                                  \
    vt_err vt__##k##_exec(vt_opctx *c);                                                                                \
    void vt__##k##_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out);
VT__KIND_DECL(im2col)
VT__KIND_DECL(dgather)
VT__KIND_DECL(wperm)
VT__KIND_DECL(add)
VT__KIND_DECL(coldot)
VT__KIND_DECL(bn_center)
VT__KIND_DECL(bn_apply)
VT__KIND_DECL(bn_running)
VT__KIND_DECL(bn_gamma_grad)
VT__KIND_DECL(bn_backward)
VT__KIND_DECL(bn_eval)
VT__KIND_DECL(maxpool)
VT__KIND_DECL(maxpool_backward)
VT__KIND_DECL(avgpool)
VT__KIND_DECL(avgpool_backward)
VT__KIND_DECL(windows)
VT__KIND_DECL(embed)
VT__KIND_DECL(onehot)
VT__KIND_DECL(pos_grad)
VT__KIND_DECL(row_sum)
VT__KIND_DECL(ln_center)
VT__KIND_DECL(ln_norm)
VT__KIND_DECL(affine)
VT__KIND_DECL(ln_backward)
VT__KIND_DECL(gelu)
VT__KIND_DECL(heads)
VT__KIND_DECL(bmm)
VT__KIND_DECL(softmax_causal)
VT__KIND_DECL(dropout)
VT__KIND_DECL(sumsq)
VT__KIND_DECL(sum_scalars)
VT__KIND_DECL(clip_factor)
VT__KIND_DECL(adam_scaled)
VT__KIND_DECL(adamw)
#undef VT__KIND_DECL

#endif
