/* The device-resident step protocol of vt_model_run (kernels/vt_backend.h: run_begin, run_op,
 * op_to_host, op_to_device, run_end), which the CUDA backend implements (cuda/vt_cuda_model.cu),
 * checked on the CPU with a mock device: a shadow copy of the model's arenas in host memory. The
 * mock runs on its shadow exactly the kinds the CUDA backend runs on the GPU (the CPU kernels,
 * pointed at the shadow arenas) and refuses the others, which vt_model_run then brackets with the
 * transfers. Any transfer missing from the protocol - a tensor read on one side that the other
 * side wrote - makes the mock's run differ from the plain CPU run: the test requires the same
 * state, loss and log at every step, in both roundings, with SGD and with Adam, and that the
 * mock ran most operations and moved some tensors. */
#include <stdlib.h>
#include <string.h>

#include "data/vt_data.h"
#include "kernels/vt_backend.h"
#include "model/vt_model.h"
#include "model/vt_ops.h"
#include "rounding_log/vt_epilogue.h"
#include "vt_test.h"

typedef struct {
    vt_model *m;
    uint8_t *shadow[VT_TC_COUNT];
    int have;
    uint64_t on_device, moved;
} mock;

/* the kinds cuda/vt_cuda_model.cu runs on the GPU */
static int device_kind(uint16_t k)
{
    switch (k) {
    case VT_OPK_MATMUL: case VT_OPK_BIAS_ADD: case VT_OPK_RELU: case VT_OPK_RELU_BWD: case VT_OPK_SOFTMAX:
    case VT_OPK_XENT_LOSS: case VT_OPK_XENT_BWD: case VT_OPK_COLSUM: case VT_OPK_SGD_VELOCITY:
    case VT_OPK_SGD_APPLY: case VT_OPK_ADAM_MOMENTS: case VT_OPK_ADAM_APPLY:
        return 1;
    default:
        return 0;
    }
}

static void swap_arenas(mock *d)
{
    for (int c = 0; c < VT_TC_COUNT; c++) {
        uint8_t *t = d->m->arena[c];
        d->m->arena[c] = d->shadow[c];
        d->shadow[c] = t;
    }
    d->m->state = (float *)d->m->arena[VT_TC_PARAM];
}

static vt_err mock_gemm(void *impl, vt_rctx *rc, uint32_t op, int tA, int tB, size_t M, size_t N, size_t K,
                        const float *A, const float *B, float *out)
{
    vt_model *m = ((mock *)impl)->m;
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_gemm(&m->exec, tA, tB, M, N, K, A, B, m->x64, m->rn, m->cn, &bd));
    return vt_round(rc, op, m->x64, &bd, M, N, out);
}

static vt_err mock_begin(void *impl, struct vt_model *m)
{
    mock *d = impl;
    if (!d->have) {
        for (int c = 0; c < VT_TC_COUNT; c++)
            if (c == VT_TC_PARAM || c > VT_TC_BUFFER) {
                d->shadow[c] = calloc(m->prog.arena_bytes[c] ? m->prog.arena_bytes[c] : 1, 1);
                if (!d->shadow[c]) return VT_ERR_NOMEM;
                memcpy(d->shadow[c], m->arena[c], m->prog.arena_bytes[c]);
            }
        d->shadow[VT_TC_OPT] = d->shadow[VT_TC_BUFFER] = d->shadow[VT_TC_PARAM];
        d->have = 1;
    }
    memcpy(d->shadow[VT_TC_PARAM], m->arena[VT_TC_PARAM], m->prog.arena_bytes[VT_TC_PARAM]);
    return VT_OK;
}

static vt_err mock_op(void *impl, struct vt_model *m, vt_rctx *rc, uint32_t op, uint64_t step)
{
    mock *d = impl;
    uint16_t k = m->prog.op[op].kind;
    if (!device_kind(k) || (k != VT_OPK_RELU && k != VT_OPK_RELU_BWD && !vt_epi_supported(rc)))
        return VT_ERR_UNSUPPORTED;
    swap_arenas(d);
    vt_err e = vt_model_exec_op(m, m->ds, rc, step, op);
    swap_arenas(d);
    d->on_device++;
    return e;
}

static void *shadow_of(mock *d, vt_model *m, uint32_t t)
{
    const vt_tensor *x = &m->prog.t[t];
    return d->shadow[x->cls] + x->off;
}

static vt_err mock_move(mock *d, vt_model *m, uint32_t op, int to_host)
{
    const vt_opdesc *o = &m->prog.op[op];
    for (uint32_t k = 0; k < o->n_in + o->n_out; k++) {
        if (!to_host && k < o->n_in) continue;
        uint32_t t = k < o->n_in ? o->in[k] : o->out[k - o->n_in];
        size_t bytes;
        void *h = vt_model_tensor(m, t, &bytes);
        memcpy(to_host ? h : shadow_of(d, m, t), to_host ? shadow_of(d, m, t) : h, bytes);
        d->moved++;
    }
    return VT_OK;
}

static vt_err mock_to_host(void *impl, struct vt_model *m, vt_rctx *rc, uint32_t op)
{
    (void)rc;
    return mock_move(impl, m, op, 1);
}
static vt_err mock_to_device(void *impl, struct vt_model *m, uint32_t op) { return mock_move(impl, m, op, 0); }

static vt_err mock_end(void *impl, struct vt_model *m, vt_rctx *rc)
{
    (void)rc;
    mock *d = impl;
    memcpy(m->arena[VT_TC_PARAM], d->shadow[VT_TC_PARAM], m->prog.arena_bytes[VT_TC_PARAM]);
    size_t bytes;
    void *h = vt_model_tensor(m, m->prog.loss, &bytes);
    memcpy(h, shadow_of(d, m, m->prog.loss), bytes);
    return VT_OK;
}

static void compare(const char *what, const vt_recipe *rc, const vt_dataset *ds)
{
    vt_model a, b;
    CHECK_OK(vt_model_init(&a, rc, ds->n, VT_ORDER_FORWARD));
    CHECK_OK(vt_model_init(&b, rc, ds->n, VT_ORDER_FORWARD));
    if (!a.state || !b.state) return;
    mock d = {.m = &b};
    vt_backend be = {.name = "mock", .impl = &d, .gemm_round = mock_gemm, .run_begin = mock_begin, .run_op = mock_op,
                     .op_to_host = mock_to_host, .op_to_device = mock_to_device, .run_end = mock_end};
    vt_model_set_backend(&b, &be);
    vt_steplog la, lb;
    vt_steplog_init(&la, 0);
    vt_steplog_init(&lb, 0);
    vt_rctx ca, cb;
    vt_rctx_init(&ca, VT_RMODE_RECORD, rc->bound);
    vt_rctx_init(&cb, VT_RMODE_RECORD, rc->bound);
    int same = 1;
    uint64_t entries = 0;
    for (uint64_t s = 1; s <= rc->steps && same; s++) {
        float fa = 0, fb = 0;
        CHECK_OK(vt_rctx_begin_step(&ca, s, &la));
        CHECK_OK(vt_rctx_begin_step(&cb, s, &lb));
        CHECK_OK(vt_model_step(&a, ds, &ca, &fa));
        CHECK_OK(vt_model_step(&b, ds, &cb, &fb));
        uint8_t ha[32], hb[32];
        CHECK_OK(vt_steplog_hash(&la, ha));
        CHECK_OK(vt_steplog_hash(&lb, hb));
        entries += vt_steplog_total_entries(&lb);
        same = memcmp(a.state, b.state, a.n_state * sizeof(float)) == 0 && memcmp(&fa, &fb, 4) == 0 &&
               memcmp(ha, hb, 32) == 0;
        CHECK(same, "%s: step %llu: the device-resident protocol gives another state, loss or log", what,
              (unsigned long long)s);
    }
    CHECK(ca.stats.rounded == cb.stats.rounded, "%s: the same number of rounded elements", what);
    CHECK(d.on_device > rc->steps * (b.prog.n_ops / 2) && d.moved > 0,
          "%s: the mock ran %llu operations and moved %llu tensors", what, (unsigned long long)d.on_device,
          (unsigned long long)d.moved);
    printf("%s: %llu steps alike; %llu operations on the mock device, %llu tensor moves, %llu log entries\n", what,
           (unsigned long long)rc->steps, (unsigned long long)d.on_device, (unsigned long long)d.moved,
           (unsigned long long)entries);
    vt_steplog_free(&la);
    vt_steplog_free(&lb);
    vt_model_free(&a);
    vt_model_free(&b);
    free(d.shadow[VT_TC_PARAM]);
    for (int c = VT_TC_BUFFER + 1; c < VT_TC_COUNT; c++) free(d.shadow[c]);
}

int main(void)
{
    vt_dataset ds;
    memset(&ds, 0, sizeof ds);
    vt_err e = vt_data_load("mnist-train", NULL, &ds);
    CHECK(e == VT_OK, "load mnist-train: %s", vt_errmsg());
    if (e) return vt_test_finish("test_resident");
    static const char *const variants[][3] = {
        {"SGD, exact rounding", "rounding=exact", "optimizer=sgd"},
        {"SGD, log rounding", "rounding=log", "optimizer=sgd"},
        {"Adam, exact rounding", "rounding=exact", "optimizer=adam"},
        {"Adam, log rounding", "rounding=log", "optimizer=adam"},
    };
    for (size_t v = 0; v < 4; v++) {
        vt_recipe rc;
        vt_recipe_default(&rc);
        CHECK_OK(vt_recipe_set(&rc, "steps=12"));
        CHECK_OK(vt_recipe_set(&rc, "layers=[784,48,10]"));
        CHECK_OK(vt_recipe_set(&rc, variants[v][1]));
        CHECK_OK(vt_recipe_set(&rc, variants[v][2]));
        CHECK_OK(vt_recipe_validate(&rc));
        compare(variants[v][0], &rc, &ds);
    }
    vt_data_free(&ds);
    return vt_test_finish("test_resident");
}
