/* test_program - the step program (ops/vt_program.h, vt_ops.h): what the MLP builder produces,
 * what vt_program_finish refuses, tensors on the wire, multi-output hashes and producers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/vt_bytes.h"
#include "../../common/vt_hash.h"
#include "../../model/vt_model.h"
#include "vt_test.h"

#define ARR(...) ((const uint32_t[]){__VA_ARGS__})
#define IARG(...) ((const int64_t[]){__VA_ARGS__})

static void check_mlp(const char *opt, uint32_t want_state)
{
    vt_recipe rc;
    vt_recipe_default(&rc);
    CHECK_OK(vt_recipe_set(&rc, "layers=[20,7,5,3]"));
    CHECK_OK(vt_recipe_set(&rc, opt));
    rc.batch = 4;
    vt_model m;
    CHECK_OK(vt_model_init(&m, &rc, 16, VT_ORDER_PAIRWISE));
    const vt_program *p = &m.prog;
    CHECK(p->n_state == want_state, "%s: %u state tensors, want %u", opt, p->n_state, want_state);
    CHECK(m.n_state == p->state_floats, "%s: state size", opt);
    size_t floats = 0;
    for (uint32_t t = 0; t < p->n_state; t++) floats += p->t[t].n;
    CHECK(floats == m.n_state, "%s: the state is packed (%zu of %zu)", opt, floats, m.n_state);
    CHECK(strcmp(p->t[0].name, "fc1.weight") == 0 && p->t[0].shape[0] == 20 && p->t[0].shape[1] == 7, "%s: fc1.weight",
          opt);
    /* every input is a state tensor or produced earlier in the step */
    for (uint32_t j = 1; j <= p->n_ops; j++)
        for (uint32_t k = 0; k < p->op[j].n_in; k++) {
            int prev;
            uint32_t t = p->op[j].in[k], q = vt_program_producer(p, j, t, &prev);
            CHECK(t < p->n_state || (q > 0 && q < j && !prev), "%s: op %u reads %s unproduced", opt, j, p->t[t].name);
        }
    /* multi-output hash: VTOH over the tensor hashes */
    for (uint32_t j = 1; j <= p->n_ops; j++) {
        if (p->op[j].n_out < 2) continue;
        uint8_t th[2][32], want[32], got[32], buf[8 + 64];
        CHECK_OK(vt_model_tensor_hash(&m, p->op[j].out[0], th[0]));
        CHECK_OK(vt_model_tensor_hash(&m, p->op[j].out[1], th[1]));
        memcpy(buf, "VTOH", 4);
        vt_put_u32le(buf + 4, 2);
        memcpy(buf + 8, th, 64);
        CHECK_OK(vt_sha256(buf, sizeof buf, want));
        CHECK_OK(vt_model_output_hash(&m, j, got));
        CHECK(memcmp(want, got, 32) == 0, "%s: op %u's output hash is VTOH over its outputs", opt, j);
    }
    /* the wire: F64 as two words, U8 as its value, a U8 word above 255 refused */
    uint32_t lr = vt_program_find(p, "lr"), y = vt_program_find(p, "labels");
    CHECK(vt_model_tensor_words(&m, lr) == 2 && vt_model_tensor_words(&m, y) == 4, "%s: word counts", opt);
    double v = 0.125;
    memcpy(vt_model_tensor(&m, lr, NULL), &v, 8);
    uint32_t w[4];
    vt_model_tensor_save(&m, lr, w);
    CHECK(w[0] == 0 && w[1] == 0x3fc00000u, "%s: F64 words %08x %08x", opt, w[0], w[1]);
    uint32_t yw[4] = {1, 2, 255, 0};
    CHECK_OK(vt_model_tensor_load(&m, y, yw, 4));
    CHECK(((uint8_t *)vt_model_tensor(&m, y, NULL))[2] == 255, "%s: U8 loaded", opt);
    yw[1] = 256;
    CHECK(vt_model_tensor_load(&m, y, yw, 4) == VT_ERR_MISMATCH, "%s: a U8 word of 256 is refused", opt);
    CHECK(vt_model_tensor_load(&m, y, yw, 3) == VT_ERR_MISMATCH, "%s: a short tensor is refused", opt);
    char *txt = NULL;
    CHECK_OK(vt_program_describe(p, &txt));
    CHECK(txt && strstr(txt, "fc3 forward GEMM"), "%s: the description names the operations", opt);
    free(txt);
    vt_model_free(&m);
}

/* a two-tensor program: x (param [4]), y (act [4]); ops as given must be refused */
static vt_err small(int variant)
{
    vt_program p;
    vt_program_init(&p);
    uint32_t x = vt_prog_tensor(&p, VT_TC_PARAM, VT_DT_F32, 1, ARR(4), "x");
    uint32_t a = vt_prog_tensor(&p, VT_TC_ACT, VT_DT_F32, 1, ARR(4), variant == 1 ? "x" : "a");
    uint32_t b = vt_prog_tensor(&p, VT_TC_ACT, VT_DT_F32, 1, ARR(variant == 2 ? 5 : 4), "b");
    uint32_t l = vt_prog_tensor(&p, VT_TC_ACT, VT_DT_F32, 0, NULL, "loss");
    uint32_t c = vt_prog_tensor(&p, VT_TC_ACT, VT_DT_F32, 1, ARR(4), "c");
    if (variant == 3) vt_prog_op(&p, VT_OPK_RELU, ARR(b), 1, ARR(a), 1, NULL, 0, NULL, 0, "reads b unwritten");
    vt_prog_op(&p, VT_OPK_RELU, ARR(x), 1, ARR(a), 1, NULL, 0, NULL, 0, "relu");
    if (variant == 4) { /* a two-output producer, one of whose outputs is overwritten before a reader */
        vt_prog_op(&p, VT_OPK_RELU, ARR(x), 1, ARR(c), 1, NULL, 0, NULL, 0, "c");
        vt_prog_op(&p, VT_OPK_ADAM_MOMENTS, ARR(x, a, c), 3, ARR(a, c), 2, NULL, 0, (const double[]){0.9, 0.99}, 2,
                   "moments");
        vt_prog_op(&p, VT_OPK_RELU, ARR(x), 1, ARR(c), 1, NULL, 0, NULL, 0, "overwrites c");
    }
    vt_prog_op(&p, variant == 5 ? 999 : VT_OPK_RELU, ARR(a), 1, ARR(b), 1, NULL, 0, NULL, 0, "relu again");
    vt_prog_op(&p, VT_OPK_RELU_BWD, ARR(a, b), 2, ARR(b), 1, NULL, 0, NULL, 0, "reads a");
    if (variant == 6) vt_prog_op(&p, VT_OPK_MATMUL, ARR(a, b), 2, ARR(b), 1, IARG(0, 0, 1, 4, 4), 5, NULL, 0, "bad gemm");
    p.loss = l, p.input = x, p.labels = x, p.probs = a, p.fwd_first = 1, p.fwd_last = 1;
    vt_err e = vt_program_finish(&p);
    vt_program_free(&p);
    return e;
}

/* augmentation: the op against an independent geometric reference (pad with zeros, crop at the
 * drawn offsets, mirror), for every example of a batch; evaluation reads the augmented tensor */
static void check_augment(void)
{
    vt_recipe rc;
    vt_recipe_default(&rc);
    CHECK_OK(vt_recipe_set(&rc, "layers=[48,5,3]"));
    rc.image_channels = 3, rc.image_height = 4, rc.image_width = 4, rc.augment_pad = 2, rc.augment_flip = 1;
    rc.batch = 6;
    vt_model m;
    CHECK_OK(vt_model_init(&m, &rc, 16, VT_ORDER_BLAS));
    const vt_program *p = &m.prog;
    uint32_t x = vt_program_find(p, "input"), xa = vt_program_find(p, "input.augmented"), j = 0;
    for (uint32_t q = 1; q <= p->n_ops; q++)
        if (p->op[q].kind == VT_OPK_AUGMENT) j = q;
    CHECK(j == 2 && xa != UINT32_MAX && p->input == xa, "the augment op follows the batch and evaluation reads its output");
    CHECK(p->op[j + 1].kind == VT_OPK_SCHEDULE && p->op[p->fwd_first].in[0] == xa, "the forward pass reads the augmented batch");
    float *in = vt_model_tensor(&m, x, NULL), *out = vt_model_tensor(&m, xa, NULL);
    for (size_t e = 0; e < 6 * 48; e++) in[e] = (float)(e + 1);
    vt_steplog log;
    vt_steplog_init(&log, 0);
    vt_rctx rctx;
    vt_rctx_init(&rctx, VT_RMODE_RECORD, rc.bound);
    int flips = 0, shifts = 0;
    for (uint64_t step = 1; step <= 8; step++) {
        CHECK_OK(vt_rctx_begin_step(&rctx, step, &log));
        CHECK_OK(vt_model_exec_op(&m, NULL, &rctx, step, j));
        for (size_t b = 0; b < 6; b++) {
            uint32_t oy, ox;
            int fl;
            vt_augment_draw(rc.seed, step, b, 2, 1, &oy, &ox, &fl);
            CHECK(oy <= 4 && ox <= 4, "offsets in [0, 2 pad]");
            flips += fl, shifts += oy != 2 || ox != 2;
            float padded[3][8][8] = {{{0}}};
            for (int c = 0; c < 3; c++)
                for (int i = 0; i < 4; i++)
                    for (int k = 0; k < 4; k++) padded[c][i + 2][k + 2] = in[b * 48 + (size_t)(c * 16 + i * 4 + k)];
            int same = 1;
            for (int c = 0; c < 3; c++)
                for (int i = 0; i < 4; i++)
                    for (int k = 0; k < 4; k++) {
                        float crop = padded[c][i + (int)oy][(fl ? 3 - k : k) + (int)ox];
                        same &= out[b * 48 + (size_t)(c * 16 + i * 4 + k)] == crop;
                    }
            CHECK(same, "step %llu example %zu: crop (%u, %u), flip %d as the reference", (unsigned long long)step, b,
                  oy, ox, fl);
        }
    }
    CHECK(flips > 0 && flips < 48 && shifts > 0, "the draws flip some examples and shift some (%d flips)", flips);
    vt_steplog_free(&log);
    vt_model_free(&m);
    rc.augment_pad = 5;
    CHECK(vt_recipe_validate(&rc) == VT_ERR_ARG, "a pad beyond the image is refused");
    rc.augment_pad = 1, rc.image_width = 5;
    CHECK(vt_recipe_validate(&rc) == VT_ERR_ARG, "an image shape that is not the input width is refused");
}

/* arch=resnet: the state's classes in order (parameters, velocities, buffers), the buffers are the
 * batch norms' running statistics (running variance initialised to one), every input of the step
 * produced earlier or state, the evaluation pass outside the step using the running statistics;
 * bad shapes refused */
static void check_resnet(void)
{
    static const char *const R[] = {"arch=resnet", "dataset=cifar10-train", "layers=[3072,10]", "image_channels=3",
                                    "image_height=32", "image_width=32", "resnet_width=4", "resnet_stages=3",
                                    "resnet_blocks=2", "batch=2", NULL};
    vt_recipe rc;
    vt_recipe_default(&rc);
    for (int i = 0; R[i]; i++) CHECK_OK(vt_recipe_set(&rc, R[i]));
    vt_program p;
    CHECK_OK(vt_program_build(&rc, &p));
    uint32_t cls_last = 0, buffers = 0, bn = 0;
    for (uint32_t t = 0; t < p.n_state; t++) {
        CHECK(p.t[t].cls >= cls_last, "state tensor %s out of class order", p.t[t].name);
        cls_last = p.t[t].cls;
        if (p.t[t].cls == VT_TC_BUFFER) {
            buffers++;
            int var = strstr(p.t[t].name, ".running_var") != NULL;
            CHECK(var || strstr(p.t[t].name, ".running_mean"), "buffer %s", p.t[t].name);
            CHECK(vt_program_initial_value(&p, 1, t, 0) == (var ? 1.0f : 0.0f), "initial %s", p.t[t].name);
        }
        if (strstr(p.t[t].name, ".bn") && strstr(p.t[t].name, ".weight") && p.t[t].cls == VT_TC_PARAM) bn++;
    }
    CHECK(buffers == 2 * bn && bn == 1 + 3 * 4 + 2, "%u buffers for %u batch norms", buffers, bn);
    for (uint32_t j = 1; j <= p.n_ops; j++)
        for (uint32_t k = 0; k < p.op[j].n_in; k++) {
            int prev;
            uint32_t t = p.op[j].in[k], q = vt_program_producer(&p, j, t, &prev);
            CHECK(t < p.n_state || (q > 0 && q < j && !prev), "op %u reads %s unproduced", j, p.t[t].name);
            CHECK(p.op[j].kind != VT_OPK_BN_EVAL, "op %u: evaluation-mode batch norm in the step", j);
        }
    uint32_t first, last, evals = 0;
    vt_program_eval_range(&p, &first, &last);
    CHECK(p.n_eval > 0 && first == p.n_ops + 1 && last == p.n_ops + p.n_eval, "evaluation pass %u..%u", first, last);
    for (uint32_t j = first; j <= last; j++) evals += p.op[j].kind == VT_OPK_BN_EVAL;
    CHECK(evals == bn, "%u evaluation-mode batch norms for %u", evals, bn);
    vt_program_free(&p);
    static const char *const bad[] = {"image_height=30", "resnet_stages=7", "layers=[3072,64,10]", "bn_eps=0",
                                      "resnet_pool=2", NULL};
    for (int i = 0; bad[i]; i++) {
        vt_recipe b = rc;
        CHECK_OK(vt_recipe_set(&b, bad[i]));
        vt_err e = vt_program_build(&b, &p);
        CHECK(e != VT_OK, "resnet with %s must be refused", bad[i]);
        if (e) printf("refused (%s): %s\n", bad[i], vt_errmsg());
    }
}

/* arch=gpt: dataflow, the evaluation pass without dropout, the variadic norm over every gradient,
 * and refusals */
static void check_gpt(void)
{
    static const char *const R[] = {"arch=gpt", "dataset=shakespeare-train", "gpt_layers=2", "gpt_heads=2",
                                    "gpt_width=16", "gpt_context=8", "dropout=0.1", "optimizer=adamw", "batch=2",
                                    NULL};
    vt_recipe rc;
    vt_recipe_default(&rc);
    for (int i = 0; R[i]; i++) CHECK_OK(vt_recipe_set(&rc, R[i]));
    vt_program p;
    CHECK_OK(vt_program_build(&rc, &p));
    uint32_t params = 0, drops = 0;
    for (uint32_t t = 0; t < p.n_state; t++) params += p.t[t].cls == VT_TC_PARAM;
    for (uint32_t j = 1; j <= p.n_ops; j++) {
        drops += p.op[j].kind == VT_OPK_DROPOUT;
        if (p.op[j].kind == VT_OPK_SUM_SCALARS) CHECK(p.op[j].n_in == params, "norm over %u of %u", p.op[j].n_in, params);
        for (uint32_t k = 0; k < p.op[j].n_in; k++) {
            int prev;
            uint32_t t = p.op[j].in[k], q = vt_program_producer(&p, j, t, &prev);
            CHECK(t < p.n_state || (q > 0 && q < j && !prev), "gpt op %u reads %s unproduced", j, p.t[t].name);
        }
    }
    CHECK(drops == 2 * (1 + 2 * 2), "%u dropout operations (forward and backward of 5)", drops);
    uint32_t first, last;
    vt_program_eval_range(&p, &first, &last);
    CHECK(p.n_eval > 0, "no evaluation pass with dropout");
    for (uint32_t j = first; j <= last; j++) CHECK(p.op[j].kind != VT_OPK_DROPOUT, "dropout in the evaluation pass");
    vt_program_free(&p);
    static const char *const bad[] = {"gpt_heads=3", "optimizer=adam", "gpt_vocab=300", "dropout=1", "gpt_context=1",
                                      NULL};
    for (int i = 0; bad[i]; i++) {
        vt_recipe b = rc;
        CHECK_OK(vt_recipe_set(&b, bad[i]));
        vt_err e = vt_program_build(&b, &p);
        CHECK(e != VT_OK, "gpt with %s must be refused", bad[i]);
        if (e) printf("refused (%s): %s\n", bad[i], vt_errmsg());
    }
}

int main(void)
{
    check_gpt();
    check_resnet();
    check_augment();
    check_mlp("optimizer=sgd", 12);
    check_mlp("optimizer=adam", 18);
    CHECK_OK(small(0));
    static const char *const why[] = {"", "a duplicate name", "a wrong shape", "a read before the write",
                                      "an overwrite between producer and reader", "an unknown kind", "a bad GEMM"};
    for (int v = 1; v <= 6; v++) {
        CHECK(small(v) != VT_OK, "a program with %s must be refused", why[v]);
        printf("refused (%s): %s\n", why[v], vt_errmsg());
    }
    return vt_test_finish("test_program");
}
