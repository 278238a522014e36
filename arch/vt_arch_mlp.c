/* vt_arch_mlp.c - the builder of arch "mlp": ReLU hidden layers, softmax cross-entropy, SGD with
 * momentum or Adam. It only describes the step; the interpreter runs it (vt_model.h). */
#include <stdio.h>
#include <string.h>

#include "vt_arch.h"

#define ARR(...) ((const uint32_t[]){__VA_ARGS__})
#define IARG(...) ((const int64_t[]){__VA_ARGS__})
#define FARG(...) ((const double[]){__VA_ARGS__})
#define N(a) (sizeof(a) / sizeof((a)[0]))

vt_err vt_arch_mlp_build(const vt_recipe *rcp, vt_program *p)
{
    const uint32_t L = rcp->n_layers, B = rcp->batch;
    const uint32_t *w = rcp->widths;
    uint32_t W[VT_MAX_LAYERS + 1] = {0}, b[VT_MAX_LAYERS + 1] = {0};
    /* the state: parameters, then the optimiser's tensors - first (velocity or exp_avg) of every
     * parameter, then (Adam) exp_avg_sq of every parameter; this order is the state hash's */
    for (uint32_t l = 1; l <= L; l++) {
        W[l] = vt_prog_tensor(p, VT_TC_PARAM, VT_DT_F32, 2, ARR(w[l - 1], w[l]), "fc%u.weight", l);
        vt_prog_init_he(p, W[l], w[l - 1]);
        b[l] = vt_prog_tensor(p, VT_TC_PARAM, VT_DT_F32, 1, ARR(w[l]), "fc%u.bias", l);
    }
    uint32_t P[2 * VT_MAX_LAYERS + 2] = {0}, M1[2 * VT_MAX_LAYERS + 2] = {0}, M2[2 * VT_MAX_LAYERS + 2] = {0};
    for (uint32_t t = 0; t < 2 * L; t++) P[t] = t % 2 ? b[t / 2 + 1] : W[t / 2 + 1];
    vt_arch_opt_tensors(p, rcp, 2 * L, P, M1, M2);
    if (p->bad) return vt_program_finish(p);

    /* the step's inputs */
    uint32_t x, y, xa, tstep, lr;
    vt_arch_inputs(p, rcp, &x, &y, &xa, &tstep, &lr);
    /* activations and gradients */
    uint32_t ZG[VT_MAX_LAYERS + 1] = {0}, Z[VT_MAX_LAYERS + 1] = {0}, A[VT_MAX_LAYERS + 1] = {0},
             DZ[VT_MAX_LAYERS + 1] = {0}, DA[VT_MAX_LAYERS + 1] = {0}, GW[VT_MAX_LAYERS + 1] = {0},
             GB[VT_MAX_LAYERS + 1] = {0};
    A[0] = xa; /* what the forward pass reads */
    for (uint32_t l = 1; l <= L; l++) {
        ZG[l] = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(B, w[l]), "fc%u.matmul", l);
        Z[l] = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(B, w[l]), "fc%u.out", l);
        if (l < L) A[l] = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(B, w[l]), "relu%u.out", l);
    }
    uint32_t probs = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(B, w[L]), "probs");
    uint32_t loss = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 0, NULL, "loss");
    for (uint32_t l = L; l >= 1; l--) {
        DZ[l] = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 2, ARR(B, w[l]), "fc%u.out.grad", l);
        if (l > 1) DA[l - 1] = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 2, ARR(B, w[l - 1]), "relu%u.out.grad", l - 1);
    }
    for (uint32_t l = 1; l <= L; l++) {
        GW[l] = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 2, ARR(w[l - 1], w[l]), "fc%u.weight.grad", l);
        GB[l] = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 1, ARR(w[l]), "fc%u.bias.grad", l);
    }
    if (p->bad) return vt_program_finish(p);

    /* the operations, in execution order (their ids) */
    vt_arch_input_ops(p, rcp, x, y, xa, tstep, lr);
    p->fwd_first = p->n_ops + 1;
    for (uint32_t l = 1; l <= L; l++) {
        vt_prog_op(p, VT_OPK_MATMUL, ARR(A[l - 1], W[l]), 2, ARR(ZG[l]), 1, IARG(0, 0, B, w[l], w[l - 1]), 5, NULL, 0,
                   "fc%u forward GEMM", l);
        vt_prog_op(p, VT_OPK_BIAS_ADD, ARR(ZG[l], b[l]), 2, ARR(Z[l]), 1, NULL, 0, NULL, 0, "fc%u bias add", l);
        if (l < L) vt_prog_op(p, VT_OPK_RELU, ARR(Z[l]), 1, ARR(A[l]), 1, NULL, 0, NULL, 0, "relu%u", l);
    }
    vt_prog_op(p, VT_OPK_SOFTMAX, ARR(Z[L]), 1, ARR(probs), 1, NULL, 0, NULL, 0, "softmax");
    p->fwd_last = p->n_ops;
    vt_prog_op(p, VT_OPK_XENT_LOSS, ARR(probs, y), 2, ARR(loss), 1, NULL, 0, NULL, 0, "cross-entropy loss");
    vt_prog_op(p, VT_OPK_XENT_BWD, ARR(probs, y), 2, ARR(DZ[L]), 1, NULL, 0, NULL, 0, "logits gradient");
    for (uint32_t l = L; l >= 1; l--) {
        vt_prog_op(p, VT_OPK_MATMUL, ARR(A[l - 1], DZ[l]), 2, ARR(GW[l]), 1, IARG(1, 0, w[l - 1], w[l], B), 5, NULL, 0,
                   "fc%u weight-gradient GEMM", l);
        vt_prog_op(p, VT_OPK_COLSUM, ARR(DZ[l]), 1, ARR(GB[l]), 1, NULL, 0, NULL, 0, "fc%u bias gradient", l);
        if (l > 1) {
            vt_prog_op(p, VT_OPK_MATMUL, ARR(DZ[l], W[l]), 2, ARR(DA[l - 1]), 1, IARG(0, 1, B, w[l - 1], w[l]), 5, NULL,
                       0, "fc%u input-gradient GEMM", l);
            vt_prog_op(p, VT_OPK_RELU_BWD, ARR(Z[l - 1], DA[l - 1]), 2, ARR(DZ[l - 1]), 1, NULL, 0, NULL, 0,
                       "relu%u backward", l - 1);
        }
    }
    uint32_t G[2 * VT_MAX_LAYERS + 2];
    for (uint32_t t = 0; t < 2 * L; t++) G[t] = t % 2 ? GB[t / 2 + 1] : GW[t / 2 + 1];
    vt_arch_update_ops(p, rcp, 2 * L, P, G, M1, M2, tstep, lr);
    p->loss = loss, p->input = xa, p->labels = y, p->probs = probs; /* evaluation fills xa: no augmentation */
    return vt_program_finish(p);
}
