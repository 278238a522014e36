/* Device-resident steps on the CPU twin of the GPU: the protocol of vt_model_run
 * (kernels/vt_backend.h: run_begin, run_op, op_to_host, op_to_device, run_end) and the device
 * kinds' own code, against the CPU reference. The twin device is a shadow copy of the model's
 * arenas in host memory; on it the twin runs what cuda/vt_cuda_model.cu runs on the GPU, from the
 * same source: every non-GEMM kind through vt_dev_op_make, the items of vt__dev_op_item (one
 * loop iteration where the GPU has one thread) and vt_dev_op_finish, the GEMMs through the
 * epilogue's host twin vt_epi_host; the other kinds it refuses, and vt_model_run brackets them
 * with the transfers. A missing transfer or a device kind computing anything else than the CPU's
 * kernel makes the twin's run differ from the plain CPU run: the test requires the same state,
 * loss and log at every step, in both roundings, with SGD and with Adam. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/vt_data.h"
#include "kernels/vt_backend.h"
#include "model/vt_model.h"
#include "model/vt_ops.h"
#include "cuda/vt_dev_ops.h"
#include "rounding_log/vt_epilogue.h"
#include "vt_test.h"

typedef struct {
    vt_model *m;
    uint8_t *shadow[VT_TC_COUNT];
    int have;
    uint64_t on_device, moved;
} mock;

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

static void *shadow_of(mock *d, vt_model *m, uint32_t t);
static void *shadow_ptr(void *ctx, uint32_t t)
{
    mock *d = ctx;
    return shadow_of(d, d->m, t);
}

/* what vt_cuda_run_op does, on the shadow */
static vt_err mock_op(void *impl, struct vt_model *m, vt_rctx *rc, uint32_t op, uint64_t step)
{
    (void)step;
    mock *d = impl;
    const vt_opdesc *o = &m->prog.op[op];
    if (o->kind == VT_OPK_MATMUL) {
        if (!vt_epi_supported(rc)) return VT_ERR_UNSUPPORTED;
        const int64_t *a = o->iarg;
        int tA = (int)a[0], tB = (int)a[1];
        size_t M = (size_t)a[2], N = (size_t)a[3], K = (size_t)a[4];
        const float *A = shadow_ptr(d, o->in[0]), *B = shadow_ptr(d, o->in[1]);
        vt_bounds bd;
        VT_FORWARD_IF_ERROR(vt_gemm(&m->exec, tA, tB, M, N, K, A, B, m->x64, m->rn, m->cn, &bd));
        vt_gemm_epi ep = {.A = A, .B = B, .a_si = tA ? 1 : K, .a_sk = tA ? M : 1, .b_sk = tB ? 1 : N,
                          .b_sj = tB ? K : 1, .K = K};
        d->on_device++;
        return vt_epi_host(rc, op, ep, m->x64, M, N, shadow_ptr(d, o->out[0]));
    }
    vt_dev_op dop;
    if (!vt_dev_op_make(m, rc, op, shadow_ptr, d, &dop)) return VT_ERR_UNSUPPORTED;
    unsigned long long err = ~0ULL;
    dop.err = &err;
    dop.scratch = dop.scratch_n ? calloc(dop.scratch_n, sizeof(double)) : NULL;
    dop.res = dop.res_n ? calloc(dop.res_n, sizeof(vt_epi_res)) : NULL;
    if ((dop.scratch_n && !dop.scratch) || (dop.res_n && !dop.res)) return VT_ERR_NOMEM;
    for (size_t i = 0; i < dop.n_items; i++) vt__dev_op_item(&dop, i);
    /* the GPU reads the failure words later (before its next synchronising operation), but reports
     * the first failing operation the same way: the shared decoder */
    vt_err e = vt_dev_err_report(rc, m, op, err);
    if (!e) e = vt_dev_op_finish(rc, &dop, dop.res);
    free(dop.scratch);
    free(dop.res);
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
    vt_model a, b, r; /* the CPU, the twin, and a CPU replayer of the twin's log */
    CHECK_OK(vt_model_init(&a, rc, ds->n, VT_ORDER_FORWARD));
    CHECK_OK(vt_model_init(&b, rc, ds->n, VT_ORDER_FORWARD));
    CHECK_OK(vt_model_init(&r, rc, ds->n, VT_ORDER_REVERSE));
    if (!a.state || !b.state || !r.state) return;
    mock d = {.m = &b};
    vt_backend be = {.name = "mock", .impl = &d, .gemm_round = mock_gemm, .run_begin = mock_begin, .run_op = mock_op,
                     .op_to_host = mock_to_host, .op_to_device = mock_to_device, .run_end = mock_end};
    vt_model_set_backend(&b, &be);
    vt_steplog la, lb;
    vt_steplog_init(&la, 0);
    vt_steplog_init(&lb, 0);
    vt_rctx ca, cb, cr;
    vt_rctx_init(&ca, VT_RMODE_RECORD, rc->bound);
    vt_rctx_init(&cb, VT_RMODE_RECORD, rc->bound);
    vt_rctx_init(&cr, VT_RMODE_REPLAY, rc->bound);
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
        /* the stored values are RN32 of exact values in both roundings: the same state and loss;
         * exact rounding has no log, and a log-rounding twin's log (its own values: column sums from
         * the exact value) must be accepted by a CPU replayer in another order, with the same state */
        float fr = 0;
        CHECK_OK(vt_rctx_begin_step(&cr, s, &lb));
        vt_err er = vt_model_step(&r, ds, &cr, &fr);
        CHECK(er == VT_OK, "%s: step %llu: a CPU replayer refuses the twin's log: %s", what, (unsigned long long)s,
              vt_errmsg());
        CHECK(er || vt_rctx_end_step(&cr) == VT_OK, "%s: every record of the twin's log consumed", what);
        same = memcmp(a.state, b.state, a.n_state * sizeof(float)) == 0 && memcmp(&fa, &fb, 4) == 0 &&
               memcmp(r.state, b.state, b.n_state * sizeof(float)) == 0 &&
               (rc->bound.rounding == VT_ROUNDING_LOG || memcmp(ha, hb, 32) == 0);
        CHECK(same, "%s: step %llu: the device-resident twin gives another state, loss or log", what,
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
    vt_model_free(&r);
    free(d.shadow[VT_TC_PARAM]);
    for (int c = VT_TC_BUFFER + 1; c < VT_TC_COUNT; c++) free(d.shadow[c]);
}

/* A failing step: the CPU and the twin fail alike - the error, its message, the fault's
 * operation and element. poison 1: a NaN in a bias (the device's bias_add fails); 2: labels that
 * are no class (the network has 5 outputs; MNIST has labels up to 9). */
static void compare_failure(const char *what, vt_recipe rc, const vt_dataset *ds, int poison)
{
    if (poison == 2) CHECK_OK(vt_recipe_set(&rc, "layers=[784,32,5]"));
    vt_model a, b;
    CHECK_OK(vt_model_init(&a, &rc, ds->n, VT_ORDER_FORWARD));
    CHECK_OK(vt_model_init(&b, &rc, ds->n, VT_ORDER_FORWARD));
    if (!a.state || !b.state) return;
    mock d = {.m = &b};
    vt_backend be = {.name = "mock", .impl = &d, .gemm_round = mock_gemm, .run_begin = mock_begin, .run_op = mock_op,
                     .op_to_host = mock_to_host, .op_to_device = mock_to_device, .run_end = mock_end};
    vt_model_set_backend(&b, &be);
    if (poison == 1)
        for (uint32_t t = 0; t < a.prog.n_tensors; t++)
            if (strstr(a.prog.t[t].name, "bias") && a.prog.t[t].cls == VT_TC_PARAM) {
                ((float *)vt_model_tensor(&a, t, NULL))[3] = NAN;
                ((float *)vt_model_tensor(&b, t, NULL))[3] = NAN;
                break;
            }
    vt_steplog la, lb;
    vt_steplog_init(&la, 0);
    vt_steplog_init(&lb, 0);
    vt_rctx ca, cb;
    vt_rctx_init(&ca, VT_RMODE_RECORD, rc.bound);
    vt_rctx_init(&cb, VT_RMODE_RECORD, rc.bound);
    float fa, fb;
    CHECK_OK(vt_rctx_begin_step(&ca, 1, &la));
    CHECK_OK(vt_rctx_begin_step(&cb, 1, &lb));
    vt_err ea = vt_model_step(&a, ds, &ca, &fa);
    char ma[256];
    snprintf(ma, sizeof ma, "%s", vt_errmsg());
    vt_err eb = vt_model_step(&b, ds, &cb, &fb);
    CHECK(ea != VT_OK && ea == eb, "%s: both fail alike (cpu %d, twin %d)", what, ea, eb);
    CHECK(strcmp(ma, vt_errmsg()) == 0, "%s: the same message (cpu \"%s\", twin \"%s\")", what, ma, vt_errmsg());
    CHECK(ca.fault.code == cb.fault.code && ca.fault.op_id == cb.fault.op_id && ca.fault.index == cb.fault.index,
          "%s: the same fault (cpu op %u index %llu, twin op %u index %llu)", what, ca.fault.op_id,
          (unsigned long long)ca.fault.index, cb.fault.op_id, (unsigned long long)cb.fault.index);
    printf("%s: both fail: %s\n", what, ma);
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
        CHECK_OK(vt_recipe_set(&rc, "steps=30"));
        CHECK_OK(vt_recipe_set(&rc, "layers=[784,128,64,10]"));
        CHECK_OK(vt_recipe_set(&rc, variants[v][1]));
        CHECK_OK(vt_recipe_set(&rc, variants[v][2]));
        CHECK_OK(vt_recipe_validate(&rc));
        compare(variants[v][0], &rc, &ds);
        if (v % 2 == 0) {
            char what[96];
            snprintf(what, sizeof what, "%s, NaN bias", variants[v][0]);
            compare_failure(what, rc, &ds, 1);
            snprintf(what, sizeof what, "%s, labels beyond the classes", variants[v][0]);
            compare_failure(what, rc, &ds, 2);
        }
    }
    vt_data_free(&ds);
    /* the residual CNN: convolutions' gathers and weight transpose, batch norm, pooling, residual
     * additions, column sums and dot products on the twin; augmentation and the loader on the CPU */
    memset(&ds, 0, sizeof ds);
    e = vt_data_load("cifar10-train", NULL, &ds);
    CHECK(e == VT_OK, "load cifar10-train: %s", vt_errmsg());
    if (e) return vt_test_finish("test_resident");
    for (int log = 0; log < 2; log++) {
        vt_recipe rc;
        vt_recipe_default(&rc);
        static const char *const set[] = {"arch=resnet", "dataset=cifar10-train", "layers=[3072,10]",
                                          "image_channels=3", "image_height=32", "image_width=32", "augment_pad=4",
                                          "augment_flip=1", "resnet_width=4", "resnet_stages=2", "resnet_blocks=1",
                                          "resnet_pool=1", "batch=8", "steps=6", "lr=0.05", "momentum=0.9"};
        for (size_t k = 0; k < sizeof set / sizeof set[0]; k++) CHECK_OK(vt_recipe_set(&rc, set[k]));
        CHECK_OK(vt_recipe_set(&rc, log ? "rounding=log" : "rounding=exact"));
        CHECK_OK(vt_recipe_validate(&rc));
        compare(log ? "ResNet, log rounding" : "ResNet, exact rounding", &rc, &ds);
    }
    vt_data_free(&ds);
    return vt_test_finish("test_resident");
}
