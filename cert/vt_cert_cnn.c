/* vt_cert_cnn.c - the graph of a program's evaluation pass (docs/certify.md "The residual CNN"): each
 * operation of vt_program_eval_range translated into a node of vt_cert_graph, for one example (row 0
 * of the batch): im2col + matmul a convolution, matmul of a vector a dense layer, batchnorm_eval,
 * bias_add, relu, add, maxpool, global_avgpool; the final softmax is not bounded (its input is the
 * logits). Any other operation is refused naming it. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/vt_cnn.h"
#include "../model/vt_model.h"
#include "../ops/vt_ops.h"
#include "../ops/vt_program.h"
#include "vt_cert_graph.h"

typedef struct {
    uint32_t node; /* graph node of a tensor, or UINT32_MAX */
    int64_t conv[8]; /* an im2col's arguments (B H W C k stride pad chw) when the tensor is its output */
    uint32_t conv_in;
    int is_col;
} tmap;

vt_err vt_cert_graph_from_program(vt_model *m, uint32_t *logits, vt_cert_graph **out)
{
    const vt_program *p = &m->prog;
    uint32_t first, last, B = m->rcp.batch;
    vt_program_eval_range(p, &first, &last);
    VT_RETURN_ERROR_IF(B < 1 || p->t[p->input].n % B, VT_ERR_INTERNAL, "certify: the input's batch");
    tmap *tm = calloc(p->n_tensors, sizeof *tm);
    VT_RETURN_ERROR_IF(!tm, VT_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < p->n_tensors; i++) tm[i].node = UINT32_MAX;
    vt_cert_graph *g = NULL;
    vt_err e = vt_cert_graph_new((uint32_t)(p->t[p->input].n / B), &g);
    if (!e) tm[p->input].node = 0;
    uint32_t j = first;
    for (; j <= last && !e; j++) {
        const vt_opdesc *o = &p->op[j];
        uint32_t id = UINT32_MAX, a = o->n_in ? tm[o->in[0]].node : UINT32_MAX;
        const int64_t *ia = o->iarg;
        if (o->kind == VT_OPK_SOFTMAX && j == last) break;
        if (o->kind == VT_OPK_IM2COL) {
            if (a == UINT32_MAX || ia[0] != B) goto refuse;
            memcpy(tm[o->out[0]].conv, ia, sizeof tm[0].conv);
            tm[o->out[0]].conv_in = a, tm[o->out[0]].is_col = 1;
            continue;
        }
        if (o->kind == VT_OPK_MATMUL && tm[o->in[0]].is_col) {
            const int64_t *c = tm[o->in[0]].conv;
            if (ia[0] || ia[1]) goto refuse;
            e = vt_cert_graph_conv(g, tm[o->in[0]].conv_in, (uint32_t)c[1], (uint32_t)c[2], (uint32_t)c[3], (uint32_t)c[4],
                                   (uint32_t)c[5], (uint32_t)c[6], (int)c[7], (uint32_t)ia[3],
                                   vt_model_tensor(m, o->in[1], NULL), 1, &id);
        } else if (o->kind == VT_OPK_CONV2D) { /* step program 2: the convolution as one operation */
            if (a == UINT32_MAX || ia[0] != B) goto refuse;
            e = vt_cert_graph_conv(g, a, (uint32_t)ia[1], (uint32_t)ia[2], (uint32_t)ia[3], (uint32_t)ia[4], (uint32_t)ia[5],
                                   (uint32_t)ia[6], (int)ia[7], (uint32_t)ia[8], vt_model_tensor(m, o->in[1], NULL), 1, &id);
        } else if (o->kind == VT_OPK_MATMUL) {
            if (a == UINT32_MAX || ia[0] || ia[1] || ia[2] != B || ia[4] != vt_cert_graph_size(g, a)) goto refuse;
            e = vt_cert_graph_dense(g, a, (uint32_t)ia[3], vt_model_tensor(m, o->in[1], NULL), 1, &id);
        } else if (o->kind == VT_OPK_BN_EVAL) {
            const vt_tensor *x = &p->t[o->in[0]];
            if (a == UINT32_MAX || x->rank != 2) goto refuse;
            e = vt_cert_graph_bn(g, a, x->shape[1], vt_model_tensor(m, o->in[1], NULL), vt_model_tensor(m, o->in[2], NULL),
                                 vt_model_tensor(m, o->in[3], NULL), vt_model_tensor(m, o->in[4], NULL), o->farg[0], &id);
        } else if (o->kind == VT_OPK_BIAS_ADD) {
            if (a == UINT32_MAX || p->t[o->in[1]].n != vt_cert_graph_size(g, a)) goto refuse;
            e = vt_cert_graph_bias(g, a, vt_model_tensor(m, o->in[1], NULL), &id);
        } else if (o->kind == VT_OPK_RELU) {
            if (a == UINT32_MAX) goto refuse;
            e = vt_cert_graph_relu(g, a, &id);
        } else if (o->kind == VT_OPK_ADD) {
            uint32_t b = tm[o->in[1]].node;
            if (a == UINT32_MAX || b == UINT32_MAX) goto refuse;
            e = vt_cert_graph_add(g, a, b, &id);
        } else if (o->kind == VT_OPK_MAXPOOL) {
            if (a == UINT32_MAX || ia[0] != B) goto refuse;
            e = vt_cert_graph_maxpool(g, a, (uint32_t)ia[1], (uint32_t)ia[2], (uint32_t)ia[3], (uint32_t)ia[4], &id);
        } else if (o->kind == VT_OPK_AVGPOOL) {
            if (a == UINT32_MAX || ia[0] != B || ia[1] < 1 || vt_cert_graph_size(g, a) % (uint32_t)ia[1]) goto refuse;
            e = vt_cert_graph_avgpool(g, a, (uint32_t)ia[1], vt_cert_graph_size(g, a) / (uint32_t)ia[1],
                                      vt_avgpool_weight((size_t)ia[1]), &id);
        } else {
            goto refuse;
        }
        if (!e) tm[o->out[0]].node = id;
        continue;
    refuse:
        e = vt_set_error(VT_ERR_UNSUPPORTED, "certify: the evaluation pass's operation \"%s\" (%s) is not supported",
                         o->name, vt_opkind_get(o->kind) ? vt_opkind_get(o->kind)->name : "?");
    }
    if (!e && (j != last || p->op[last].kind != VT_OPK_SOFTMAX ||
               tm[p->op[last].in[0]].node != vt_cert_graph_n_nodes(g) - 1))
        e = vt_set_error(VT_ERR_UNSUPPORTED, "certify: the evaluation pass does not end with the logits' softmax");
    if (!e) *logits = p->op[last].in[0];
    free(tm);
    if (e) vt_cert_graph_free(g);
    else *out = g;
    return e;
}

/* One operation of the evaluation pass (ids after the step's: vt_model_exec_op runs the step's only),
 * on the CPU reference with the model's scratch and evaluation settings, as the model's own
 * evaluation runs it: the confirmation of a counterexample. */
vt_err vt_cert_eval_op(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, uint32_t op_id)
{
    uint32_t first, last;
    vt_program_eval_range(&m->prog, &first, &last);
    VT_RETURN_ERROR_IF(op_id < first || op_id > last, VT_ERR_ARG, "certify: no evaluation operation %u", op_id);
    if (op_id <= m->prog.n_ops) return vt_model_exec_op(m, ds, rctx, 1, op_id);
    vt_opctx c;
    memset(&c, 0, sizeof c);
    c.prog = &m->prog, c.arena = m->arena, c.o = &m->prog.op[op_id], c.op_id = op_id, c.step = 1, c.ds = ds, c.rctx = rctx;
    c.exec = &m->exec, c.gemm_arith = (uint32_t)m->rcp.gemm_arith;
    c.s = (vt_opscratch){m->x64, m->x64b, m->b64, m->rn, m->cn, m->f32s};
    return vt_opkind_get(c.o->kind)->exec(&c);
}
