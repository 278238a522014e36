/* vt_ops_int.h - helpers shared by the files that implement operation kinds (vt_ops.c,
 * vt_ops_cnn.c, vt_ops_gpt.c), and every kind's entry points for the table in vt_ops.c, declared
 * from the list (vt_kinds.h). Not a public API. */
#ifndef VT_OPS_INT_H
#define VT_OPS_INT_H

#include "vt_ops.h"

static inline const vt_tensor *T(const vt_program *p, uint32_t id) { return &p->t[id]; }

/* tensor id has dtype dt and n elements */
vt_err vti_op_want(const vt_program *p, const vt_opdesc *o, uint32_t id, vt_dtype dt, size_t n, const char *what);
#define want vti_op_want
/* input 0 is a rank-2 [N, C] FP32 tensor */
vt_err vti_op_rows(const vt_program *p, const vt_opdesc *o, vt_tensor const **x);
/* the cost of an elementwise operation: flop_per per output element, every tensor touched once */
void vti_cost_elementwise(const vt_program *p, const vt_opdesc *o, double flop_per, vt_opcost *out);
#define cost_elementwise vti_cost_elementwise
/* every input and the output are F32 with the output's element count */
vt_err vti_same_n_check(const vt_program *p, const vt_opdesc *o);

static inline float *vti_op_f(const vt_opctx *c, const uint32_t *ids, uint32_t k)
{
    const vt_tensor *t = &c->prog->t[ids[k]];
    return (float *)(void *)(c->arena[t->cls] + t->off);
}
#define IN(k) vti_op_f(c, c->o->in, (k))
#define OUT(k) vti_op_f(c, c->o->out, (k))
#define NOUT(k) (c->prog->t[c->o->out[k]].n)
#define ROUND(xs, bnd, rows, cols, out) VT_FORWARD_IF_ERROR(vt_round(c->rc, c->op_id, (xs), (bnd), (rows), (cols), (out)))

/* every kind's check, exec and cost, named by its stem in the list (vt_kinds.h); a stem shared by
 * several kinds is declared once per kind, which C allows */
#define VTI_KIND_DECL(ID, nm, fam, rd, ni, no, nia, nfa, ia, fa, red, dev, impl)                                       \
    vt_err vti_##impl##_check(const vt_program *p, const vt_opdesc *o);                                                \
    vt_err vti_##impl##_exec(vt_opctx *c);                                                                             \
    void vti_##impl##_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out);
VT_KINDS(VTI_KIND_DECL)
#undef VTI_KIND_DECL

#endif
