/* test_program - the step program (model/vt_program.h, vt_ops.h): what the MLP builder produces,
 * what vt_program_finish refuses, tensors on the wire, multi-output hashes and producers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_hash.h"
#include "../model/vt_model.h"
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

int main(void)
{
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
