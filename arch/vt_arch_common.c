/* vt_arch_common.c - what the architecture builders share (vt_model.h): the step's inputs and
 * their operations (load, augment, schedule: vt_arch_inputs, vt_arch_input_ops) and the
 * optimiser's state tensors and update operations (vt_arch_opt_tensors, vt_arch_update_ops). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_arch.h"
#include "vt_graph.h"

#define ARR(...) ((const uint32_t[]){__VA_ARGS__})
#define IARG(...) ((const int64_t[]){__VA_ARGS__})
#define FARG(...) ((const double[]){__VA_ARGS__})

void vt_arch_opt_tensors(vt_program *p, const vt_recipe *rcp, uint32_t n, const uint32_t *params, uint32_t *m1,
                         uint32_t *m2)
{
    const int adam = rcp->optimizer != VT_OPT_SGD; /* Adam and AdamW */
    for (int k = 0; k < 1 + adam && !p->bad; k++)
        for (uint32_t i = 0; i < n && !p->bad; i++) {
            const vt_tensor *t = &p->t[params[i]];
            uint32_t shape[VT_MAX_RANK];
            memcpy(shape, t->shape, sizeof shape);
            const char *nm = k ? "exp_avg_sq" : adam ? "exp_avg" : "velocity";
            uint32_t id = vt_prog_tensor(p, VT_TC_OPT, VT_DT_F32, t->rank, shape, "%s.%s", p->t[params[i]].name, nm);
            if (k) m2[i] = id;
            else m1[i] = id;
        }
}

/* the global gradient norm's clipping factor of the n gradients (recipe clip_norm): each one's sum of
 * squares, their sum, the factor min(1, clip_norm / norm); the GPT's, and a client model's under AdamW */
static uint32_t clip_factor(vt_program *p, const vt_recipe *rcp, uint32_t n, const uint32_t *params,
                            const uint32_t *grads)
{
    uint32_t *sq = calloc(n ? n : 1, sizeof *sq);
    if (!sq) p->bad = 1;
    for (uint32_t i = 0; i < n && sq && !p->bad; i++) {
        sq[i] = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 1, ARR(1), "%s.sumsq", p->t[grads[i]].name);
        vt_prog_op(p, VT_OPK_SUMSQ, ARR(grads[i]), 1, ARR(sq[i]), 1, NULL, 0, NULL, 0, "%s squared norm",
                   p->t[params[i]].name);
    }
    uint32_t tot = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 1, ARR(1), "grad.sqnorm");
    uint32_t factor = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 1, ARR(1), "grad.clip_factor");
    if (sq && !p->bad) {
        vt_prog_op(p, VT_OPK_SUM_SCALARS, sq, n, ARR(tot), 1, NULL, 0, NULL, 0, "global gradient norm");
        vt_prog_op(p, VT_OPK_CLIP_FACTOR, ARR(tot), 1, ARR(factor), 1, NULL, 0, FARG(rcp->clip_norm), 1,
                   "clipping factor");
    }
    free(sq);
    return factor;
}

void vt_arch_update_ops(vt_program *p, const vt_recipe *rcp, uint32_t n, const uint32_t *params,
                        const uint32_t *grads, const uint32_t *m1, const uint32_t *m2, const uint8_t *decay,
                        uint32_t tstep, uint32_t lr)
{
    const uint32_t factor = rcp->optimizer == VT_OPT_ADAMW && rcp->clip_norm > 0 && n
                                ? clip_factor(p, rcp, n, params, grads)
                                : UINT32_MAX;
    for (uint32_t t = 0; t < n && !p->bad; t++) {
        uint32_t pw = params[t], g = grads[t];
        const char *nm = p->t[pw].name;
        if (rcp->optimizer == VT_OPT_SGD) {
            vt_prog_op(p, VT_OPK_SGD_VELOCITY, ARR(pw, g, m1[t]), 3, ARR(m1[t]), 1, NULL, 0,
                       FARG(rcp->momentum, rcp->weight_decay), 2, "SGD velocity %s", nm);
            vt_prog_op(p, VT_OPK_SGD_APPLY, ARR(pw, m1[t], lr), 3, ARR(pw), 1, NULL, 0, NULL, 0, "SGD update %s", nm);
            continue;
        }
        if (factor != UINT32_MAX)
            vt_prog_op(p, VT_OPK_ADAM_SCALED, ARR(g, m1[t], m2[t], factor), 4, ARR(m1[t], m2[t]), 2, NULL, 0,
                       FARG(rcp->beta1, rcp->beta2), 2, "Adam moments %s", nm);
        else
            vt_prog_op(p, VT_OPK_ADAM_MOMENTS, ARR(g, m1[t], m2[t]), 3, ARR(m1[t], m2[t]), 2, NULL, 0,
                       FARG(rcp->beta1, rcp->beta2), 2, "Adam moments %s", nm);
        if (rcp->optimizer == VT_OPT_ADAMW)
            vt_prog_op(p, VT_OPK_ADAMW, ARR(pw, m1[t], m2[t], tstep, lr), 5, ARR(pw), 1, NULL, 0,
                       FARG(rcp->beta1, rcp->beta2, rcp->eps, !decay || decay[t] ? rcp->weight_decay : 0.0), 4,
                       "AdamW update %s", nm);
        else
            vt_prog_op(p, VT_OPK_ADAM_APPLY, ARR(pw, m1[t], m2[t], tstep, lr), 5, ARR(pw), 1, NULL, 0,
                       FARG(rcp->beta1, rcp->beta2, rcp->eps), 3, "Adam update %s", nm);
    }
}

void vt_arch_inputs(vt_program *p, const vt_recipe *rcp, uint32_t *x, uint32_t *y, uint32_t *xa, uint32_t *tstep,
                    uint32_t *lr)
{
    const uint32_t B = rcp->batch, d = rcp->widths[0];
    *x = vt_prog_tensor(p, VT_TC_INPUT, VT_DT_F32, 2, ARR(B, d), "input");
    *y = rcp->loss == VT_LOSS_XENT
             ? vt_prog_tensor(p, VT_TC_INPUT, VT_DT_U8, 1, ARR(B), "labels")
             : vt_prog_tensor(p, VT_TC_INPUT, VT_DT_F32, 2, ARR(B, rcp->widths[rcp->n_layers]), "targets");
    *xa = rcp->augment_pad || rcp->augment_flip ? vt_prog_tensor(p, VT_TC_INPUT, VT_DT_F32, 2, ARR(B, d), "input.augmented")
                                              : *x;
    *tstep = vt_prog_tensor(p, VT_TC_INPUT, VT_DT_F64, 0, NULL, "step");
    *lr = vt_prog_tensor(p, VT_TC_INPUT, VT_DT_F64, 0, NULL, "lr");
}

void vt_arch_input_ops(vt_program *p, const vt_recipe *rcp, uint32_t x, uint32_t y, uint32_t xa, uint32_t tstep,
                       uint32_t lr)
{
    if (rcp->loss == VT_LOSS_XENT)
        vt_prog_op(p, VT_OPK_LOAD_BATCH, NULL, 0, ARR(x, y), 2, IARG(rcp->batch), 1, NULL, 0, "load batch");
    else vt_prog_op(p, VT_OPK_LOAD_BATCH_TARGETS, NULL, 0, ARR(x, y), 2, IARG(rcp->batch), 1, NULL, 0, "load batch");
    if (xa != x)
        vt_prog_op(p, VT_OPK_AUGMENT, ARR(x), 1, ARR(xa), 1,
                   IARG(rcp->image_channels, rcp->image_height, rcp->image_width, rcp->augment_pad, rcp->augment_flip,
                        (int64_t)rcp->seed),
                   6, NULL, 0, "augment batch");
    vt_arch_schedule_op(p, rcp, tstep, lr);
}

void vt_arch_schedule_op(vt_program *p, const vt_recipe *rcp, uint32_t tstep, uint32_t lr)
{
    vt_prog_op(p, VT_OPK_SCHEDULE, NULL, 0, ARR(tstep, lr), 2,
               IARG(rcp->schedule, (int64_t)rcp->warmup, (int64_t)rcp->decay_every, (int64_t)rcp->steps), 4,
               FARG(rcp->lr, rcp->decay_factor, rcp->final_lr_factor), 3, "learning-rate schedule");
}

vt_err vt_program_build(const vt_recipe *rcp, vt_program *p)
{
    vt_program_init(p);
    vt_err e = vt_recipe_validate(rcp);
    if (!e && rcp->has_model) { /* the client's own graph, from the manifest's canonical form */
        vt_graph g;
        if (!(e = vt_graph_decode(rcp->model_graph, rcp->model_graph_len, &g))) e = vt_graph_build(&g, rcp, p);
        vt_graph_free(&g);
    } else if (!e) switch (rcp->arch) {
        case VT_ARCH_MLP: {
            vt_graph g;
            if (!(e = vt_graph_mlp(rcp, &g))) e = vt_graph_build(&g, rcp, p);
            vt_graph_free(&g);
            break;
        }
        case VT_ARCH_RESNET:
        case VT_ARCH_GPT:
            if (rcp->program_version >= 3) { /* derived from the architecture's forward graph */
                vt_graph g;
                e = rcp->arch == VT_ARCH_GPT ? vt_graph_gpt(rcp, &g) : vt_graph_resnet(rcp, &g);
                if (!e) e = vt_graph_build(&g, rcp, p);
                vt_graph_free(&g);
            } else e = rcp->arch == VT_ARCH_GPT ? vt_arch_gpt_build(rcp, p) : vt_arch_resnet_build(rcp, p);
            break;
        default: e = vt_set_error(VT_ERR_ARG, "recipe: unknown arch %d", (int)rcp->arch);
        }
    if (e) vt_program_free(p);
    else p->gemm_arith = (uint32_t)rcp->gemm_arith;
    return e;
}
