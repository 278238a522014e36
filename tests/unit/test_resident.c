/* Device-resident steps on the CPU twin of the GPU: the protocol of vt_model_run
 * (backend/vt_backend.h: run_begin, run_op, op_to_host, op_to_device, run_end) and the device
 * kinds' own code, against the CPU reference. The twin device is a shadow copy of the model's
 * arenas in host memory; on it the twin runs what backend/cuda/vt_cuda_model.cu runs on the GPU, from the
 * same source: every non-GEMM kind through vt_dev_op_make, the items of vti_dev_op_item (one
 * loop iteration where the GPU has one thread) and vt_dev_op_finish, the GEMMs through the
 * epilogue's host twin vt_epi_host (the convolution kinds of programs 2 and 3 as the GEMMs of the
 * operands the items vti_dev_conv_a and vti_dev_wperm form, vt_dev_conv); the other kinds it refuses, and vt_model_run brackets them
 * with the transfers. A missing transfer or a device kind computing anything else than the CPU's
 * kernel makes the twin's run differ from the plain CPU run: the test requires the same state,
 * loss and log at every step, in both roundings, with SGD and with Adam. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/vt_data.h"
#include "backend/vt_backend.h"
#include "model/vt_model.h"
#include "ops/vt_ops.h"
#include "backend/cuda/vt_dev_ops_hd.h"
#include "rounding/vt_epilogue.h"
#include "resident_check.h"
#include "vt_test.h"

typedef struct {
    vt_model *m;
    uint8_t *shadow[VT_TC_COUNT];
    int have;
    uint64_t on_device, moved;
    uint64_t conv;          /* convolution kinds it ran as GEMMs of formed operands (vt_dev_conv) */
    int check;              /* the per-operation check (VT_CUDA_CHECK_OPS=1 on the GPU) */
    uint64_t checked;       /* operations it compared */
    uint32_t tamper_op;     /* a device bug for the check to find: one bit of this operation's output */
    size_t tamper_elem;     /* element */
    uint32_t tamper_dev, tamper_cpu; /* the element's bits, tampered and as computed */
} mock;

static vt_err mock_gemm(void *impl, vt_rctx *rc, uint32_t op, int tA, int tB, size_t M, size_t N, size_t K,
                        const float *A, const float *B, float *out)
{
    vt_model *m = ((mock *)impl)->m;
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_gemm(&m->exec, tA, tB, M, N, K, A, B, m->x64, m->rn, m->cn, &bd));
    return vt_round(rc, op, m->x64, &bd, M, N, out);
}

static vt_err mock_begin(void *impl, void *model)
{
    vt_model *m = model;
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

/* what vt_cuda_model.cu's run_op does, on the shadow */
static vt_err mock_run_op(void *impl, void *model, vt_rctx *rc, uint32_t op, uint64_t step)
{
    vt_model *m = model;
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
    if (o->kind == VT_OPK_BMM) { /* what vti_cuda_bmm_dev does, with the CPU's products */
        const int64_t *a = o->iarg;
        size_t G = (size_t)a[0], M = (size_t)a[1], N = (size_t)a[2], K = (size_t)a[3];
        int tA = (int)a[4], tB = (int)a[5];
        if (!vt_epi_supported(rc) || vt_bound_panelled(&rc->bound, K)) return VT_ERR_UNSUPPORTED;
        const float *A = shadow_ptr(d, o->in[0]), *B = shadow_ptr(d, o->in[1]);
        for (size_t g = 0; g < G; g++)
            VT_FORWARD_IF_ERROR(vt_gemm_plain(&m->exec, tA, tB, M, N, K, A + g * M * K, B + g * K * N, m->x64 + g * M * N));
        vt_bmm_epi ep = {.A = A, .B = B, .a_si = tA ? 1 : K, .a_sk = tA ? M : 1, .b_sk = tB ? 1 : N, .b_sj = tB ? K : 1,
                         .M = M, .N = N, .K = K};
        d->on_device++;
        return vt_epi_host_bmm(rc, op, ep, G, m->x64, shadow_ptr(d, o->out[0]));
    }
    vt_dev_conv cv;
    if (vt_dev_conv_make(m, rc, op, &cv)) { /* program 1's GEMM of the operands formed on the device */
        if (!vt_epi_supported(rc) || o->out[0] == o->in[0] || o->out[0] == o->in[1]) return VT_ERR_UNSUPPORTED;
        float *A = malloc(cv.n_a * sizeof *A), *wp = cv.dgrad ? malloc(cv.n_wp * sizeof *wp) : NULL;
        if (!A || (cv.dgrad && !wp)) {
            free(A), free(wp);
            return vt_set_error(VT_ERR_NOMEM, "out of memory (the twin's convolution operands)");
        }
        const float *in0 = shadow_ptr(d, o->in[0]), *B = shadow_ptr(d, o->in[1]);
        for (size_t e = 0; e < cv.n_a; e++) A[e] = vti_dev_conv_a(&cv, in0, e);
        for (size_t e = 0; e < cv.n_wp; e++) wp[e] = vti_dev_wperm(cv.C, cv.Co, B, e);
        if (cv.dgrad) B = wp;
        vt_bounds bd;
        vt_err e = vt_gemm(&m->exec, cv.ta, 0, cv.M, cv.N, cv.K, A, B, m->x64, m->rn, m->cn, &bd);
        vt_gemm_epi ep = {.A = A, .B = B, .a_si = cv.ta ? 1 : cv.K, .a_sk = cv.ta ? cv.M : 1, .b_sk = cv.N, .b_sj = 1,
                          .K = cv.K};
        if (!e) e = vt_epi_host(rc, op, ep, m->x64, cv.M, cv.N, shadow_ptr(d, o->out[0]));
        free(A);
        free(wp);
        d->on_device++, d->conv++;
        return e;
    }
    vt_dev_op dop;
    if (!vt_dev_op_make(m, rc, op, step, shadow_ptr, d, &dop)) return VT_ERR_UNSUPPORTED;
    unsigned long long err = ~0ULL;
    dop.err = &err;
    dop.scratch = dop.scratch_n ? calloc(dop.scratch_n, sizeof(double)) : NULL;
    dop.res = dop.res_n ? calloc(dop.res_n, sizeof(vt_epi_res)) : NULL;
    if ((dop.scratch_n && !dop.scratch) || (dop.res_n && !dop.res)) return VT_ERR_NOMEM;
    for (size_t i = 0; i < dop.n_items; i++) vti_dev_op_item(&dop, i);
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

static vt_err mock_fetch(void *ctx, uint32_t t, void *host, size_t bytes)
{
    mock *d = ctx;
    memcpy(host, shadow_of(d, d->m, t), bytes);
    return VT_OK;
}

/* what vt_cudap_run_op does: with the check on, each operation the device runs against the CPU
 * exec of the same operation on the same inputs (backend/cuda/vt_dev_ops.c, vt_dev_check_*) */
static vt_err mock_op(void *impl, void *model, vt_rctx *rc, uint32_t op, uint64_t step)
{
    vt_model *m = model;
    mock *d = impl;
    if (!d->check || vt_kind_device(m->prog.op[op].kind) == VT_DEV_CPU) return mock_run_op(impl, m, rc, op, step);
    vt_dev_check chk;
    vt_err e = vt_dev_check_begin(m, op, mock_fetch, d, &chk);
    if (!e) e = mock_run_op(impl, m, rc, op, step);
    if (!e && op == d->tamper_op) { /* a device bug: one bit of one output element */
        uint32_t *x = (uint32_t *)shadow_of(d, m, m->prog.op[op].out[0]) + d->tamper_elem;
        d->tamper_cpu = *x;
        *x ^= 1u;
        d->tamper_dev = *x;
    }
    if (!e) e = vt_dev_check_end(m, rc, op, step, mock_fetch, d);
    if (!e) d->checked++;
    vt_dev_check_restore(m, op, &chk);
    return e;
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

static vt_err mock_to_host(void *impl, void *model, vt_rctx *rc, uint32_t op)
{
    vt_model *m = model;
    (void)rc;
    return mock_move(impl, m, op, 1);
}
static vt_err mock_to_device(void *impl, void *model, uint32_t op) { return mock_move(impl, model, op, 0); }

static vt_err mock_end(void *impl, void *model, vt_rctx *rc)
{
    vt_model *m = model;
    (void)rc;
    mock *d = impl;
    memcpy(m->arena[VT_TC_PARAM], d->shadow[VT_TC_PARAM], m->prog.arena_bytes[VT_TC_PARAM]);
    size_t bytes;
    void *h = vt_model_tensor(m, m->prog.loss, &bytes);
    memcpy(h, shadow_of(d, m, m->prog.loss), bytes);
    return VT_OK;
}

static int mock_open(vt_model *m, rs_dev *d)
{
    mock *k = calloc(1, sizeof *k);
    if (!k) return 0;
    k->m = m;
    d->state = k;
    d->be = (vt_backend){.name = "mock", .impl = k, .gemm_round = mock_gemm, .run_begin = mock_begin,
                         .run_op = mock_op, .op_to_host = mock_to_host, .op_to_device = mock_to_device,
                         .run_end = mock_end};
    return 1;
}

static void mock_close(rs_dev *d, const vt_recipe *rc, const vt_model *m, const char *what)
{
    mock *k = d->state;
    if (rc) {
        CHECK(k->on_device > rc->steps * (m->prog.n_ops / 2) && k->moved > 0,
              "%s: the twin ran %llu operations and moved %llu tensors", what, (unsigned long long)k->on_device,
              (unsigned long long)k->moved);
        uint64_t nc = 0; /* every convolution kind of every step on the twin (log rounding: the input gradients) */
        for (uint32_t j = 1; j <= m->prog.n_ops; j++) {
            uint16_t kd = m->prog.op[j].kind;
            nc += kd == VT_OPK_CONV2D_DGRAD ||
                  (rc->bound.rounding == VT_ROUNDING_EXACT && (kd == VT_OPK_CONV2D || kd == VT_OPK_CONV2D_WGRAD));
        }
        CHECK(k->conv == nc * rc->steps, "%s: %llu convolution operations on the twin, want %llu", what,
              (unsigned long long)k->conv, (unsigned long long)(nc * rc->steps));
    }
    printf("; %llu operations on the twin, %llu tensor moves\n", (unsigned long long)k->on_device,
           (unsigned long long)k->moved);
    free(k->shadow[VT_TC_PARAM]);
    for (int c = VT_TC_BUFFER + 1; c < VT_TC_COUNT; c++) free(k->shadow[c]);
    free(k);
}

/* ---- the per-operation check on the twin ---- */

static int mock_open_checked(vt_model *m, rs_dev *d)
{
    if (!mock_open(m, d)) return 0;
    ((mock *)d->state)->check = 1;
    return 1;
}

static void mock_close_checked(rs_dev *d, const vt_recipe *rc, const vt_model *m, const char *what)
{
    mock *k = d->state;
    CHECK(k->checked > 0 && k->checked == k->on_device, "%s: the check compared %llu of %llu device operations", what,
          (unsigned long long)k->checked, (unsigned long long)k->on_device);
    printf("; %llu operations checked against the CPU", (unsigned long long)k->checked);
    mock_close(d, rc, m, what);
}

/* A device bug - bit 0 of element elem of the first `kind` operation's output flipped after the
 * twin computed it - stops the checked step with a message naming the operation, its kind, the
 * output tensor and that element with both values' bits; the host's copy of the state is the
 * step's start (the check restores what it borrowed). The comparison alone names the first of two
 * differing elements. */
static void check_finds(const vt_dataset *ds, uint16_t kind, size_t elem)
{
    const char *kname = vt_opkind_get(kind)->name;
    vt_recipe rc;
    vt_recipe_default(&rc);
    CHECK_OK(vt_recipe_set(&rc, "steps=1"));
    CHECK_OK(vt_recipe_set(&rc, "layers=[784,32,10]"));
    CHECK_OK(vt_recipe_validate(&rc));
    vt_model m, a;
    CHECK_OK(vt_model_init(&m, &rc, ds->n, VT_ORDER_FORWARD));
    CHECK_OK(vt_model_init(&a, &rc, ds->n, VT_ORDER_FORWARD));
    rs_dev d;
    if (!m.state || !a.state || !mock_open(&m, &d)) {
        CHECK(0, "check_finds %s: cannot set up", kname);
        return;
    }
    mock *k = d.state;
    k->check = 1;
    for (uint32_t op = 1; op <= m.prog.n_ops && !k->tamper_op; op++)
        if (m.prog.op[op].kind == kind) k->tamper_op = op;
    k->tamper_elem = elem;
    CHECK(k->tamper_op != 0, "the MLP has a %s operation", kname);
    vt_model_set_backend(&m, &d.be);
    vt_steplog log;
    vt_steplog_init(&log, 0);
    vt_rctx c;
    vt_rctx_init(&c, VT_RMODE_RECORD, rc.bound);
    CHECK_OK(vt_rctx_begin_step(&c, 1, &log));
    float loss = 0;
    vt_err e = vt_model_step(&m, ds, &c, &loss);
    const vt_opdesc *o = &m.prog.op[k->tamper_op];
    const vt_tensor *t = &m.prog.t[o->out[0]];
    char want[256], cpu[64];
    snprintf(want, sizeof want, "check: operation %u (%s), output 0 (%s): element %zu of %zu differs: device 0x%08x",
             k->tamper_op, kname, t->name, elem, t->n, k->tamper_dev);
    snprintf(cpu, sizeof cpu, "CPU 0x%08x", k->tamper_cpu);
    CHECK(e == VT_ERR_INTERNAL && strstr(vt_errmsg(), want) && strstr(vt_errmsg(), cpu),
          "the check names the altered element: want \"%s ... %s\", got %d \"%s\"", want, cpu, e, vt_errmsg());
    CHECK(memcmp(m.state, a.state, a.n_state * sizeof(float)) == 0, "check_finds %s: the host's state untouched", kname);
    printf("a device bug in %s: %s", kname, vt_errmsg());
    /* the comparison itself: two elements differ, the first is named */
    size_t bytes;
    float *dev = malloc(t->n * sizeof(float)), *ref = malloc(t->n * sizeof(float));
    const float *out = vt_model_tensor(&m, o->out[0], &bytes);
    if (dev && ref && t->n > 7) {
        memcpy(dev, out, bytes);
        memcpy(ref, out, bytes);
        dev[3] = 1.0f, ref[3] = 2.0f, dev[7] = 5.0f, ref[7] = 6.0f;
        e = vt_dev_check_compare(&m, k->tamper_op, 0, dev, ref);
        snprintf(want, sizeof want, "output 0 (%s): element 3 of %zu differs: device 0x3f800000 (1), CPU 0x40000000 (2)",
                 t->name, t->n);
        CHECK(e == VT_ERR_INTERNAL && strstr(vt_errmsg(), want), "the first differing element: want \"%s\", got \"%s\"",
              want, vt_errmsg());
        CHECK(vt_dev_check_compare(&m, k->tamper_op, 0, ref, ref) == VT_OK, "equal outputs pass");
    }
    free(dev);
    free(ref);
    mock_close(&d, NULL, &m, kname);
    vt_steplog_free(&log);
    vt_model_free(&m);
    vt_model_free(&a);
}

int main(void)
{
    static const rs_device twin = {mock_open, mock_close}, checked = {mock_open_checked, mock_close_checked};
    rs_all(&twin);
    /* the check mode (VT_CUDA_CHECK_OPS=1 on the GPU) on the twin: it passes a correct device, in
     * both roundings and every architecture, and names a device bug's element */
    rs_checked(&checked);
    vt_dataset ds;
    memset(&ds, 0, sizeof ds);
    vt_err e = vt_data_load("mnist-train", NULL, &ds);
    CHECK(e == VT_OK, "load mnist-train: %s", vt_errmsg());
    if (!e) {
        check_finds(&ds, VT_OPK_BIAS_ADD, 5);
        check_finds(&ds, VT_OPK_MATMUL, 17);
        check_finds(&ds, VT_OPK_RELU, 2);
    }
    vt_data_free(&ds);
    return vt_test_finish("test_resident");
}
